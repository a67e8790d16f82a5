#pragma once
// The subcommands of the shardproof binary. Each returns the process exit
// code. Only tools/shardproof.cpp includes CLI11 (it is slow to compile).
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace sp::tools {

// Exit codes shared by every command.
inline constexpr int kExitOk = 0;
inline constexpr int kExitBadInput = 3;

struct InspectArgs {
  std::string model;
  bool printIr = false;
  std::string format = "text";  // text | json
};
int cmdInspect(const InspectArgs& a);

struct RunArgs {
  std::string model;
  std::vector<std::string> inputs;  // NAME=FILE.npy, or rN:NAME=FILE.npy for one rank
  uint64_t seed = 0;
  std::string outDir;
  int threads = 0;
};
int cmdRun(const RunArgs& a);

// NAME with every character outside [A-Za-z0-9._-] replaced by '_'.
std::string sanitizeFileName(const std::string& name);

}  // namespace sp::tools

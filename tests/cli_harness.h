#pragma once
// Runs the real shardproof binary, like lit/FileCheck: exit code, stdout and
// stderr captured.
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace sp::test {

struct CliResult {
  int code = -1;
  std::string out, err;
};

inline std::string shellQuote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

inline std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline std::filesystem::path tempDir(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() / ("shardproof-test-" + name + "-" +
                                                       std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

// Runs the shardproof binary; with `memoryKb` > 0, under that address-space
// limit (`ulimit -v`).
inline CliResult runCli(const std::vector<std::string>& args, long memoryKb = 0) {
  static int counter = 0;
  auto dir = std::filesystem::temp_directory_path();
  std::string base = (dir / ("sp-cli-" + std::to_string(::getpid()) + "-" +
                             std::to_string(counter++))).string();
  std::string cmd = (memoryKb > 0 ? "ulimit -v " + std::to_string(memoryKb) + "; " : std::string()) +
                    shellQuote(SP_SHARDPROOF_BIN);
  for (const auto& a : args) cmd += " " + shellQuote(a);
  cmd += " >" + base + ".out 2>" + base + ".err </dev/null";
  int status = std::system(cmd.c_str());
  CliResult r;
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = slurp(base + ".out");
  r.err = slurp(base + ".err");
  std::filesystem::remove(base + ".out");
  std::filesystem::remove(base + ".err");
  return r;
}

// Whether one of a JSON report's assumptions (`verify --format json`)
// contains `text` ("ranks folded": the verdict was reached by rank folding).
template <class Json>
bool assumes(const Json& report, const std::string& text) {
  for (const auto& a : report["assumptions"])
    if (a.template get<std::string>().find(text) != std::string::npos) return true;
  return false;
}

inline std::string sourcePath(const std::string& rel) { return std::string(SP_SOURCE_DIR) + "/" + rel; }

// `verify` of a capture against a one-rank program of itself (a capture
// refines itself), with --infer-relations; the rank file is `rankName`
// (`<name>.r0.py`) in a temporary directory named after `tag`.
inline CliResult verifyAgainstItself(const std::string& capture, const std::string& tag,
                                     const std::string& rankName = "seq.r0.py") {
  auto one = tempDir(tag);
  std::filesystem::copy_file(capture, one / rankName);
  auto r = runCli({"verify", "--seq", capture, "--dist", one.string(), "--infer-relations"});
  std::filesystem::remove_all(one);
  return r;
}

}  // namespace sp::test

#pragma once
// Command-line flags of the commands that load torch.fx captures (inspect,
// run, verify), as plain strings; frontend/load.h turns them into FxOptions.
// Kept free of IR headers so the CLI translation unit stays light.
#include <string>
#include <vector>

namespace sp::frontend {

struct FxFlags {
  std::vector<std::string> groups;     // --fx-group ID=GROUP (repeatable)
  std::string mesh;                    // --mesh FILE
  std::vector<std::string> constants;  // --fx-constant [FILE:]NAME=VALUE (repeatable)
  std::vector<std::string> decomps;    // --decomp DIR (repeatable)
};

}  // namespace sp::frontend

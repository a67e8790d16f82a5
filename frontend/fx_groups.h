#pragma once
// Filling FxOptions' group mapping from `--fx-group ID=GROUP` flags and mesh
// files. GROUP is a mesh axis, axes joined by '+', `world`, `self` (a group
// of one rank: its collectives are the identity) or rank lists
// `[0, 1] [2, 3]` (a named partition `c10d_<ID>`). Mesh file lines:
//   mesh dp=2 tp=2        # axes, row-major over the ranks (at most one line)
//   group 12 = tp         # as --fx-group 12=tp
// Errors carry "file:line".
#include <string>

#include "frontend/fx_import.h"

namespace sp::frontend {

Status addGroupSpec(FxOptions& opts, const std::string& spec);
Status parseMeshText(FxOptions& opts, const std::string& text, const std::string& path);
Status loadMeshFile(FxOptions& opts, const std::string& path);

}  // namespace sp::frontend

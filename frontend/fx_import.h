#pragma once
// torch.fx frontend: the text torch.fx prints for an ATen-level GraphModule
// (TorchDynamo/AOTAutograd captures, see docs/fx-import.md) -> IR graph, and
// one capture per rank (`*.r<N>.py`) -> a distributed IR program.
//
// - Every `def forward` argument becomes a graph input; `self.<attr>` tensor
//   constants become parameters (data from FxOptions::tensorConstants).
// - `native_dropout` gets an explicit random stream: a graph input named
//   `<node>_rng`, f32 and shaped like the tensor it masks.
// - c10d functional collectives name a group id; FxOptions::groups maps ids
//   to IR groups, and every id not listed maps to defaultGroup ("world").
#include <map>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/program.h"

namespace sp::frontend {

struct FxOptions {
  // c10d group name/id as captured ('7', '12', 'tp_group') -> IR process
  // group (a mesh axis, axes joined by '+', or a group in namedGroups).
  std::map<std::string, std::string> groups;
  std::string defaultGroup = "world";
  // Mesh of the program; empty: one axis "world" over all rank files.
  ir::Mesh mesh;
  // Extra named groups declared on the program.
  std::map<std::string, ir::GroupPartition> namedGroups;
  // Values of `self._tensor_constantN` attributes by attribute name. Absent
  // ones become parameters without data.
  std::map<std::string, ir::Tensor> tensorConstants;
  // importFxGraph only: the rank the graph runs as and the world it sees,
  // which fix the group sizes of collectives (default: a world of one rank).
  int64_t rank = 0;
  int64_t worldSize = 1;
};

// One capture file -> one graph.
Result<ir::Graph> importFxGraph(const std::string& path, const FxOptions& opts = {});
// Capture text (path is used in locations and as the graph name).
Result<ir::Graph> importFxText(const std::string& text, const std::string& path,
                               const FxOptions& opts = {});
// The builder before finish (for callers that assemble programs themselves).
Result<ir::GraphBuilder> importFxToBuilder(const std::string& text, const std::string& path,
                                           const FxOptions& opts = {}, int64_t rank = 0);
// One capture per rank, in rank order (rankFiles[r] is rank r).
Result<ir::Program> importFxProgram(const std::vector<std::string>& rankFiles,
                                    const FxOptions& opts = {});

}  // namespace sp::frontend

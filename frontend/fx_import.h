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
//   to IR groups (fx_groups.h). Without a mapping every id is defaultGroup
//   ("world"); with one, an unmapped id is an error. Collectives over one
//   rank are the identity.
// - Framework kernels (apex, vLLM, TE) come from decomposition files
//   (fx_decomp.h), also through auto_functionalized.
// - Lifted tensor constants get values from fx_constants.h when known.
// - Data-dependent sizes (nonzero, torch.where(mask), x[mask], unbacked u0):
//   fx-data-dependent, or with FxOptions::partial the graph without the
//   outputs that depend on them (FxPartial says which and why).
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/program.h"

namespace sp::frontend {

// One Dynamo-lifted tensor constant the import met, and where its value came
// from: the verify report lists resolved ones as assumptions.
struct FxConstantNote {
  std::string capture;          // capture file
  int line = 0;                 // capture line of the lift_fresh_copy
  std::string name;             // "_tensor_constant2"
  ir::TensorType type;
  std::optional<double> value;  // nullopt: unknown, imported as a parameter without data
  std::string origin;           // where the value came from, or why it is unknown
  std::string str() const;
};

// A graph output a partial import left out (FxOptions::partial): its value
// depends on a node whose result size depends on tensor values (nonzero,
// torch.where(mask), x[mask], an unbacked size u0), which the IR cannot
// represent. The cause is that node, the first such one the output depends on.
struct FxDroppedOutput {
  std::string capture;   // capture file
  std::string name;      // the output's FX name
  int line = 0;          // the return line
  std::string op;        // the call whose result size is data-dependent: "torch.where"
  std::string node;      // its FX node: "where"
  std::string location;  // its capture line: "path/mixtral_moe.py:47"
  std::string reason;    // the import's message there (fx-data-dependent)
  // "output 'y' was left out: it depends on torch.where (node 'where') at m.py:47, whose result size depends on
  // tensor values"
  std::string str() const;
};

// What a partial import left out: the outputs, and the communicating calls
// among the statements it did not translate (they still run in the real
// program; nothing checks that they match across ranks or complete).
struct FxPartial {
  std::vector<FxDroppedOutput> outputs;
  std::vector<std::string> collectives;  // "all_reduce (node 'a') at d.r0.py:30"
};

// The shipped known-sites table (frontend/data/tensor_constants.txt), or
// $SHARDPROOF_FX_CONSTANTS when set ("" disables the table).
std::string defaultConstantSitesPath();

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
  // Scalar values of lifted constants, by "NAME" (every capture) or
  // "FILE:NAME" (the capture whose file name is FILE; this one wins).
  std::map<std::string, double> constantValues;
  // Known framework sites of lifted constants; "" disables the table.
  std::string constantSites = defaultConstantSitesPath();
  // Extra directories of decomposition files (*.decomp), searched before the
  // shipped ones (docs/fx-import.md, "Framework kernels").
  std::vector<std::string> decompDirs;
  // When set, every lifted constant the import meets is appended here.
  std::vector<FxConstantNote>* constantNotes = nullptr;
  // When set, a node whose result size depends on tensor values does not
  // stop the import: it and every statement that depends on it (reads its
  // value, or mutates a tensor in place with it) are left out, graph
  // outputs among them are dropped and recorded here with the node that
  // made them data-dependent (docs/fx-import.md, "Data-dependent sizes").
  // When every output is dropped the import fails with the first such
  // node's error. When null, the first such node is an error
  // (fx-data-dependent), even where no output needs it.
  FxPartial* partial = nullptr;
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

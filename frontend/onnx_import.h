#pragma once
// ONNX frontend: ModelProto (with external data) -> IR graph. Runs the ONNX
// checker and shape inference with data propagation, folds the
// Shape->Gather->Concat arithmetic of dynamic-axes exports, and maps the
// opset 13-17 ops that torch.onnx emits. com.microsoft AllReduce, AllGather
// and AllToAll (ONNX Runtime's contrib collectives) become IR collectives.
//
// Mapping notes:
// - Initializers become parameters with data (also those listed as graph
//   inputs); dim_param axes become symbolic dims, unnamed unknown axes get the
//   symbol "<input>_dim_<i>".
// - Inputs that ONNX takes as tensors but the IR takes as attributes (Reshape
//   shape, Slice starts/ends, Expand shape, TopK k, Range, OneHot depth,
//   Squeeze/Unsqueeze axes, ...) must be constant after folding; otherwise
//   the error "onnx-not-constant" names the node.
// - Range with a symbolic limit (arange(seq)) and Slice with a symbolic end
//   on a non-matching extent are lowered to reduce_sum(trilu(ones)) and a
//   gather over that range: the symbolic end is assumed to be within the
//   sliced extent (the interpreter reports an out-of-range index otherwise).
// - Dropout in inference mode (training_mode absent or false) is the
//   identity. In training mode the importer adds an explicit random stream
//   input "<output>.stream" (f32 uniform [0, 1) of the input's shape) and
//   maps the node to the IR dropout op, so randomness stays an input.
// - Gemm becomes transpose (trans_a, trans_b), matmul, mul by alpha and add
//   of beta * C, as aten.addmm / aten.linear in the fx importer.
// - com.microsoft collectives: the group is the contiguous block of
//   `group_size` ranks containing the rank (ranks [k*g, (k+1)*g)), "world"
//   when group_size equals the world size (ORT's AllReduce has no
//   group_size: every rank); group_size 1 is the identity. AllGather and
//   AllToAll without group_size are an error in a per-rank program. One
//   size g below the world gives the mesh [onnx_replica = world/g,
//   onnx_group<g> = g] and a named group "world"; several sizes give named
//   partitions "onnx_group<g>" on the one axis "world". AllGather's `axis`
//   (negative counts from the end) is the gather dim. Variadic nodes map
//   input i to output i. In a single graph (no rank files) a collective of
//   more than one rank is an error ("onnx-group"), unless
//   OnnxOptions::groupSize is given.
// - Unsupported ops fail with "onnx-unsupported-op", unsupported attribute
//   values with "onnx-unsupported-attr"; both name the node.
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/program.h"

namespace sp::frontend {

struct OnnxOptions {
  // Process group that com.microsoft collectives use (they name none).
  std::string collectiveGroup = "world";
  // Group sizes for collectives whose output shape depends on them
  // (AllGather); empty: unknown, such collectives are an error.
  ir::GroupSizeFn groupSize;
  // Set by importOnnxProgram: this file is rank `rank` of `worldSize` ranks.
  // worldSize 0: a single graph.
  int64_t rank = 0;
  int64_t worldSize = 0;
};

// Name of the group of the `size` contiguous ranks holding a rank (ORT's
// group_size), as declared on programs built by importOnnxProgram.
std::string onnxContiguousGroup(int64_t size);

Result<ir::Graph> importOnnxFile(const std::string& path, const OnnxOptions& opts = {},
                                 const ir::GroupSizeFn* groupSize = nullptr);
Result<ir::Graph> importOnnxBytes(const std::string& bytes, const std::string& name,
                                  const OnnxOptions& opts = {},
                                  const ir::GroupSizeFn* groupSize = nullptr);
// Importer building into a GraphBuilder (used for per-rank programs).
Result<ir::GraphBuilder> importOnnxToBuilder(const std::string& path, const OnnxOptions& opts = {});

// One ONNX file per rank (index = rank), a distributed program whose mesh
// and groups are those of its collectives' group sizes (see above).
Result<ir::Program> importOnnxProgram(const std::vector<std::string>& rankFiles,
                                      const OnnxOptions& opts = {});

// A serialized onnx TensorProto file (the backend test data format).
Result<ir::Tensor> readOnnxTensor(const std::string& path);

}  // namespace sp::frontend

#pragma once
// ONNX frontend: ModelProto (with external data) -> IR graph. Runs the ONNX
// checker and shape inference with data propagation, folds the
// Shape->Gather->Concat arithmetic of dynamic-axes exports, and maps the
// opset 13-17 ops that torch.onnx emits. com.microsoft AllReduce, AllGather
// and AllToAll become IR collectives.
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
// - Unsupported ops fail with "onnx-unsupported-op", unsupported attribute
//   values with "onnx-unsupported-attr"; both name the node.
#include <string>

#include "ir/graph.h"
#include "ir/program.h"

namespace sp::frontend {

struct OnnxOptions {
  // Process group that com.microsoft collectives use (they name none).
  std::string collectiveGroup = "world";
  // Group sizes for collectives whose output shape depends on them
  // (AllGather); empty: unknown, such collectives are an error.
  ir::GroupSizeFn groupSize;
};

Result<ir::Graph> importOnnxFile(const std::string& path, const OnnxOptions& opts = {},
                                 const ir::GroupSizeFn* groupSize = nullptr);
Result<ir::Graph> importOnnxBytes(const std::string& bytes, const std::string& name,
                                  const OnnxOptions& opts = {},
                                  const ir::GroupSizeFn* groupSize = nullptr);
// Importer building into a GraphBuilder (used for per-rank programs).
Result<ir::GraphBuilder> importOnnxToBuilder(const std::string& path, const OnnxOptions& opts = {});

// A serialized onnx TensorProto file (the backend test data format).
Result<ir::Tensor> readOnnxTensor(const std::string& path);

}  // namespace sp::frontend

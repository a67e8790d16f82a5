#pragma once
// ONNX frontend: ModelProto (with external data) -> IR graph. Runs the ONNX
// checker and shape inference with data propagation, folds the
// Shape->Gather->Concat arithmetic of dynamic-axes exports, and maps the
// opset 13-17 ops that torch.onnx emits. com.microsoft AllReduce, AllGather
// and AllToAll become IR collectives.
#include <string>

#include "ir/graph.h"
#include "ir/program.h"

namespace sp::frontend {

struct OnnxOptions {
  // Process group that com.microsoft collectives use (they name none).
  std::string collectiveGroup = "world";
};

Result<ir::Graph> importOnnxFile(const std::string& path, const OnnxOptions& opts = {},
                                 const ir::GroupSizeFn* groupSize = nullptr);
Result<ir::Graph> importOnnxBytes(const std::string& bytes, const std::string& name,
                                  const OnnxOptions& opts = {},
                                  const ir::GroupSizeFn* groupSize = nullptr);
// Importer building into a GraphBuilder (used for per-rank programs).
Result<ir::GraphBuilder> importOnnxToBuilder(const std::string& path, const OnnxOptions& opts = {});

}  // namespace sp::frontend

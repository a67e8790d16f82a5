#pragma once
// Loading models by file type: .onnx, text IR (.sp / .spir), torch.fx
// captures (.py), and directories of per-rank files (*.r<N>.<ext>).
#include <string>
#include <variant>

#include "ir/text.h"

namespace sp::frontend {

// A single graph or a distributed program, from any supported format.
Result<ir::Module> loadModel(const std::string& path);
Result<ir::Graph> loadGraph(const std::string& path);
// A distributed program: a text IR program file, or a directory of per-rank
// files (rank N in *.r<N>.<ext>), with mesh "world" unless told otherwise.
Result<ir::Program> loadProgram(const std::string& path);

}  // namespace sp::frontend

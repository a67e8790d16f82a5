#pragma once
// Loading models by file type: .onnx, text IR (.sp / .spir), torch.fx
// captures (.py), and directories of per-rank files (*.r<N>.<ext>).
#include <string>
#include <variant>

#include "frontend/fx_flags.h"
#include "frontend/fx_import.h"
#include "ir/text.h"

namespace sp::frontend {

// A single graph or a distributed program, from any supported format.
// `fx` applies to torch.fx captures only.
Result<ir::Module> loadModel(const std::string& path, const FxOptions& fx = {});
Result<ir::Graph> loadGraph(const std::string& path, const FxOptions& fx = {});
// A distributed program: a text IR program file, or a directory of per-rank
// files (rank N in *.r<N>.<ext>), with mesh "world" unless told otherwise.
Result<ir::Program> loadProgram(const std::string& path, const FxOptions& fx = {});

// The FxOptions the CLI flags describe (--fx-group, --mesh, --fx-constant,
// --decomp); errors name the flag.
Result<FxOptions> fxOptionsFromFlags(const FxFlags& flags);

}  // namespace sp::frontend

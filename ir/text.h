#pragma once
// The shardproof text IR: a readable format for single graphs and
// distributed programs, with exact print/parse round-trip and line:col
// diagnostics. The reference is docs/text-ir.md.
#include <string>
#include <variant>

#include "ir/program.h"

namespace sp::ir {

std::string printGraph(const Graph& g);
std::string printProgram(const Program& p);

// A text IR file holds either one graph or one program.
using Module = std::variant<Graph, Program>;

// `filename` is used in diagnostics ("model.sp:12:5: ...").
Result<Module> parseModule(const std::string& text, const std::string& filename);
Result<Graph> parseGraph(const std::string& text, const std::string& filename);
Result<Program> parseProgram(const std::string& text, const std::string& filename);

}  // namespace sp::ir

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

std::string printModule(const Module& m);

// Pieces of the format, for other text formats (relations, plans, reports)
// that embed IR literals. Each is the exact syntax the parser reads back.
std::string formatFloat(double v);                  // 1.0, 1e-05, -inf, nan
std::string formatDim(const Dim& d);                // 768, 2*seq, "odd sym"*4
std::string formatType(const TensorType& t);        // f32[batch, 2*seq]
std::string formatValueName(const std::string& n);  // %x, %"weird name"
std::string formatAttr(const AttrValue& v);         // 3, 1.0, "s", [1, 2], f32, dense<...>
std::string formatLoc(const SourceLoc& loc);        // "" or @ "gpt.py":12 node "MatMul_3"
// " {name = value, ...}" for the attributes that differ from the schema
// default, in schema order; "" when none does.
std::string formatAttrs(OpKind op, const AttrMap& attrs);

}  // namespace sp::ir

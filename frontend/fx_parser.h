#pragma once
// Parser for the Python subset that torch.fx prints for an ATen GraphModule
// (GraphModule.print_readable / the `code` of a traced module): the typed
// `def forward(self, x: "f32[8, 16]", ...)` signature, one assignment per node,
// `# File: path:line in fn, code: ...` source comments, and the return.
// Infix arithmetic, comparisons and bitwise operators (SymInt expressions
// such as `sym_size_int >= 0`, torch-level graphs' `a * 0.5`, `m & n`, `~m`)
// parse as calls of "operator.<name>" (operator.ge, operator.and_).
// The result is a small syntax tree; fx_import.cpp gives it meaning.
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ir/graph.h"
#include "ir/support.h"
#include "ir/tensor.h"

namespace sp::frontend::fx {

struct Kwarg;

struct Expr {
  enum class Kind { None, Bool, Int, Float, Str, Name, Dotted, List, Tuple, Call, Subscript };
  Kind kind = Kind::None;
  bool b = false;
  int64_t i = 0;
  double f = 0;
  std::string s;            // Str: text; Name/Dotted: "torch.float32"; Call: callee
  std::vector<Expr> items;  // List/Tuple items; Call positional args; Subscript: base, index
  std::vector<Kwarg> kwargs;  // Call keyword args, in order
  int line = 0;
  int col = 0;

  bool isNumber() const { return kind == Kind::Int || kind == Kind::Float || kind == Kind::Bool; }
  double number() const { return kind == Kind::Float ? f : kind == Kind::Int ? double(i) : b; }
  std::string str() const;  // Python-like rendering for messages
};

// A keyword argument `first = second`. A struct rather than
// std::pair<std::string, Expr>: a pair needs Expr complete where Expr declares
// its members (libstdc++ 12 with clang rejects it), a vector of a type
// completed later does not.
struct Kwarg {
  std::string first;
  Expr second;
  Kwarg(std::string k, Expr v) : first(std::move(k)), second(std::move(v)) {}
};

// Assign: `name: "type" = value` (or a chain `a = b = value`, one statement
// per target). An augmented assignment `x /= y` is the Assign
// `x = operator.itruediv(x, y)`, and with the binding FX prints after it
// (`x /= y;  itruediv: "f32[8, 2]" = x`) the Assign
// `itruediv: "f32[8, 2]" = operator.itruediv(x, y)`: the in-place meaning is
// the importer's. Declare: `name: "type";` without a value (AOTAutograd joint
// graphs declare their flattened inputs so). Unpack: `a, b, = value`.
struct Stmt {
  enum class Kind { Assign, Declare, Unpack, Return };
  Kind kind = Kind::Assign;
  std::string target;                     // Assign, Declare: the node name
  std::vector<std::string> targets;       // Unpack: the names, in order
  std::optional<std::string> annotation;  // "f32[8, 16]" (without quotes)
  Expr value;
  int line = 0;
  int col = 0;
  ir::SourceLoc src;  // from the last `# File:` comment; empty if none
  std::string code;   // that comment's `code: ...` text (the framework source line)
};

struct Param {
  std::string name;
  std::optional<std::string> annotation;
  int line = 0;
  int col = 0;
};

// torch.export's graph signature, printed after the forward by
// `print(exported_program)`: what each forward argument is (PARAMETER,
// BUFFER, CONSTANT_TENSOR, USER_INPUT, ...) and each output (USER_OUTPUT,
// LOSS_OUTPUT, BUFFER_MUTATION, GRADIENT_TO_PARAMETER, ...), with the
// module attribute it stands for ("linear.weight") where it has one.
struct SignatureEntry {
  std::string name, kind, target;
  int line = 0;
};
struct ExportSignature {
  std::vector<SignatureEntry> inputs, outputs;
  int line = 0;  // of "Graph signature:"
};

struct Module {
  std::string path;
  std::vector<Param> params;
  std::vector<Stmt> body;  // ends with the Return statement
  std::optional<ExportSignature> signature;
};

// Errors: id "fx-syntax" with location "path:line:col"; the first error in
// reading order, lexical or not, of the text the parser reads (everything
// before `def forward(` and after its return is skipped). The untyped
// `print(gm.graph)` form (`graph():`, `%x : [num_users=1] = placeholder[...]`)
// is "fx-untyped" at its `graph():` line.
Result<Module> parseModule(const std::string& text, const std::string& path);

// "f32[8, 1536]", "b8[]", "bf16[s0, 768]" -> tensor type. Errors name the text.
Result<ir::TensorType> parseTensorAnnotation(const std::string& text);

// torch dtype token ("torch.float32", "torch.long") or capture token ("f32", "b8").
std::optional<ir::DType> dtypeFromTorchName(const std::string& name);

}  // namespace sp::frontend::fx

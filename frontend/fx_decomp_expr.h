#pragma once
// The `${...}` expressions of decomposition files: integers, floats, int
// lists and dtype names; + - * / % (integer division must be exact), unary
// -, == and != (1 or 0); functions over tensor arguments rank(t), dim(t, i),
// shape(t), numel(t), dtype(t), trailing(t, n) (the last n axes as a list)
// len(list), prod(list), and group(name) (the IR group of a c10d group
// name, quoted). `None` is the string None.
#include <functional>
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "frontend/fx_emit.h"

namespace sp::frontend::fx {

using DecompValue = std::variant<int64_t, double, std::vector<int64_t>, std::string>;

struct DecompEnv {
  std::map<std::string, DecompValue> scalars;  // Python arguments
  std::map<std::string, TRef> tensors;         // tensor arguments
  // group(name): the quoted IR group a c10d group name maps to.
  std::function<Result<std::string>(const std::string&)> group;
};

// Evaluates `text`; errors have id "fx-decomp-expr" and no location.
Result<DecompValue> evalDecompExpr(const std::string& text, const DecompEnv& env);
// Text IR rendering: 5, 1e-05, inf, [0, 1], f32.
std::string renderDecompValue(const DecompValue& v);
// A call argument as a value (numbers, bools, int lists, strings, dtypes).
Result<DecompValue> decompValueOf(const Expr& e);

}  // namespace sp::frontend::fx

#pragma once
// Shapes with concrete and named symbolic dims. A Dim is a monomial:
// coef * sym1 * sym2 * ... (symbols sorted), so "batch*seq" from a flattening
// reshape and "2*seq" from a concat stay exact. A dim with no symbols is
// concrete.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ir/support.h"

namespace sp::ir {

// Largest extent we accept for any dim or element count: anything larger is
// a corrupt or adversarial model, not a tensor. 2^48, not less: S is the
// model at the global batch, never materialized (its attention scores over
// 1,024 sequences of 8,192 tokens and 128 heads are 2^43 elements); data
// that is materialized is bounded by memory, and every product of sizes is
// checked against this before it is formed.
inline constexpr int64_t kMaxElements = int64_t(1) << 48;

struct Dim {
  int64_t coef = 0;
  std::vector<std::string> syms;  // sorted, may repeat (seq*seq)

  Dim() = default;
  Dim(int64_t v) : coef(v) {}  // NOLINT: concrete dims convert implicitly
  static Dim sym(std::string name) { Dim d(1); d.syms.push_back(std::move(name)); return d; }

  bool isConcrete() const { return syms.empty(); }
  int64_t value() const { SP_ASSERT(isConcrete(), "symbolic dim has no value"); return coef; }
  bool operator==(const Dim& o) const { return coef == o.coef && syms == o.syms; }
  bool operator!=(const Dim& o) const { return !(*this == o); }
  bool operator<(const Dim& o) const {
    return syms != o.syms ? syms < o.syms : coef < o.coef;
  }
  std::string str() const;  // "768", "batch", "2*seq", "batch*seq"
};

Dim operator*(const Dim& a, const Dim& b);
// a / b when exact (b's symbols divide a's and the coefficient divides).
std::optional<Dim> exactDiv(const Dim& a, const Dim& b);
// a + b when both are multiples of the same symbol product.
std::optional<Dim> addDims(const Dim& a, const Dim& b);
Result<Dim> parseDim(const std::string& text);  // inverse of Dim::str

using Shape = std::vector<Dim>;
using Bindings = std::map<std::string, int64_t>;  // symbol -> value

std::string shapeStr(const Shape& s);          // "[8, seq, 768]"
bool isConcrete(const Shape& s);
std::optional<Dim> numElements(const Shape& s);  // product of dims
std::vector<int64_t> concreteDims(const Shape& s);  // asserts concrete
Shape shapeOf(const std::vector<int64_t>& dims);
// Substitute symbol values; errors name the unbound symbol.
Result<std::vector<int64_t>> bindShape(const Shape& s, const Bindings& b);
// Normalize a possibly negative axis against rank; error mentions op name.
Result<int64_t> normAxis(int64_t axis, int64_t rank, const std::string& what);

}  // namespace sp::ir

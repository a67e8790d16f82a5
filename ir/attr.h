#pragma once
// Typed op attributes. Every op's attributes are declared in ir/ops.def with
// a kind and a default; the factory checks them against that schema.
#include <map>
#include <string>
#include <variant>
#include <vector>

#include "ir/dtype.h"
#include "ir/shape.h"
#include "ir/tensor.h"

namespace sp::ir {

enum class AttrKind : uint8_t { Int, Float, String, Ints, Floats, Dims, Type, Tensor };

std::string_view attrKindName(AttrKind k);  // "int", "float", "str", "ints", "floats", "dims", "dtype", "tensor"

using AttrValue = std::variant<int64_t, double, std::string, std::vector<int64_t>,
                               std::vector<double>, Shape, DType, Tensor>;

inline AttrKind kindOf(const AttrValue& v) { return static_cast<AttrKind>(v.index()); }

// Ordered so printing and hashing are deterministic.
using AttrMap = std::map<std::string, AttrValue>;

}  // namespace sp::ir

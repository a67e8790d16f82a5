#pragma once
// Helpers shared by the shape functions (ir/infer_*.cpp) and the kernels
// (ir/kernels_*.cpp). Internal to the ir library.
#include <span>
#include <utility>
#include <string>
#include <vector>

#include "ir/op.h"

namespace sp::ir {

using Types = std::vector<TensorType>;

inline std::string istr(int64_t v) { return std::to_string(v); }
std::string intsStr(const std::vector<int64_t>& v);  // "[0, 2, 1]"

// Numpy broadcasting of two shapes: dims equal, or one of them is 1.
Result<Shape> broadcastShapes(const Shape& a, const Shape& b);

// dtype checks; `what` names the operand ("input", "indices", ...).
Status requireFloat(const TensorType& t, const std::string& what);
Status requireNumeric(const TensorType& t, const std::string& what);  // int or float
Status requireInteger(const TensorType& t, const std::string& what);
Status requireBool(const TensorType& t, const std::string& what);
Status requireSameDType(const TensorType& a, const TensorType& b, const std::string& what);

// Normalized, duplicate-free axes (errors "bad-axis").
Result<std::vector<int64_t>> normAxes(const std::vector<int64_t>& axes, int64_t rank);

// ONNX slice clamping on a concrete dim d: the normalized first index and the
// number of selected elements.
std::pair<int64_t, int64_t> sliceRange(int64_t start, int64_t end, int64_t step, int64_t d);

// Number of elements of range(start, limit, delta) (errors: delta 0, too long).
Result<int64_t> rangeLength(double start, double limit, double delta);

// Runs the op's shape function on the concrete types of `in` (kernels use
// this to compute output shapes and to validate attributes).
Result<Types> inferTensors(OpKind op, const AttrMap& attrs, std::span<const Tensor> in);

}  // namespace sp::ir

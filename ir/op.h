#pragma once
// The operator registry, generated from ir/ops.def.
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ir/attr.h"
#include "ir/support.h"
#include "ir/tensor.h"

namespace sp::ir {

enum class OpKind : uint16_t {
#define OP(E, NAME, MININ, MAXIN, NOUT, CAT, SHAPE, KERNEL, ATTRS) E,
#include "ir/ops.def"
#undef OP
};

inline constexpr size_t kNumOps = 0
#define OP(E, NAME, MININ, MAXIN, NOUT, CAT, SHAPE, KERNEL, ATTRS) +1
#include "ir/ops.def"
#undef OP
    ;

enum class OpCategory : uint8_t {
  Unary, Binary, Compare, Ternary, Linear, Reduce, Norm, Layout, Index,
  Source, Loss, Random, Collective
};

// Size of a process group by name; absent outside a distributed program.
using GroupSizeFn = std::function<Result<int64_t>(const std::string& group)>;

struct InferCtx {
  OpKind op;
  const AttrMap& attrs;                 // complete: defaults filled in
  std::span<const TensorType> inputs;
  const GroupSizeFn* groupSize = nullptr;
};

using ShapeFn = Result<std::vector<TensorType>> (*)(const InferCtx&);
// Kernels: inputs are concrete tensors of the inferred types; outputs are
// appended to `out`. Collective ops have no kernel: the interpreter's
// scheduler executes them across ranks.
using KernelFn = Status (*)(OpKind op, const AttrMap& attrs,
                            std::span<const Tensor> in, std::vector<Tensor>& out);

struct AttrSpec {
  std::string name;
  AttrKind kind;
  std::optional<AttrValue> defaultValue;  // nullopt: required
};

struct OpInfo {
  OpKind kind;
  std::string_view name;
  int minInputs;
  int maxInputs;   // -1: variadic
  int numOutputs;  // -1: decided by the shape function
  OpCategory category;
  ShapeFn infer;
  KernelFn kernel;  // kernelCollective for collectives
  std::vector<AttrSpec> attrs;

  const AttrSpec* attr(std::string_view n) const;
};

const OpInfo& opInfo(OpKind k);
std::string_view opName(OpKind k);
std::optional<OpKind> opByName(std::string_view name);
std::span<const OpInfo> allOps();

// Check attrs against the op's schema (unknown names, kinds) and fill in
// defaults. Errors name the op and the attribute.
Result<AttrMap> completeAttrs(OpKind k, AttrMap attrs);

// Typed attribute access for complete attribute maps (asserts presence/kind).
int64_t attrInt(const AttrMap& a, const std::string& name);
double attrFloat(const AttrMap& a, const std::string& name);
const std::string& attrStr(const AttrMap& a, const std::string& name);
const std::vector<int64_t>& attrInts(const AttrMap& a, const std::string& name);
const std::vector<double>& attrFloats(const AttrMap& a, const std::string& name);
const Shape& attrDims(const AttrMap& a, const std::string& name);
DType attrType(const AttrMap& a, const std::string& name);
const Tensor& attrTensor(const AttrMap& a, const std::string& name);

// Shape functions and kernels named in ops.def (defined in ir/infer_*.cpp and
// ir/kernels_*.cpp). kernelCollective reports an error: collectives only run
// inside the interpreter's rank scheduler.
#define OP(E, NAME, MININ, MAXIN, NOUT, CAT, SHAPE, KERNEL, ATTRS)           \
  Result<std::vector<TensorType>> SHAPE(const InferCtx&);                   \
  Status KERNEL(OpKind, const AttrMap&, std::span<const Tensor>, std::vector<Tensor>&);
#include "ir/ops.def"
#undef OP

}  // namespace sp::ir

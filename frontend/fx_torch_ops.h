#pragma once
// Dynamo's torch-level graphs (what `TORCH_LOGS=graph_code` prints and a
// `torch.compile(backend=...)` backend receives): calls of torch functions
// (`torch._C._nn.linear`, `torch.nn.functional.gelu`), Tensor methods
// (`x.view(4, 2, 8)`), Python operators (`a * 0.5`, `a @ b`, `-a`) and
// subscripts (`x[(Ellipsis, slice(None, 1, None))]`). Each is translated
// onto the ATen table (fx_ops.cpp): the one torch-level table
// (fx_torch_ops.cpp) declares, per callable, its Python signature and the
// ATen call(s) it becomes, with the arguments in the ATen schema.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "frontend/fx_emit.h"

namespace sp::frontend::fx {

// One ATen call of a translation. Steps before the last produce one
// intermediate value each (`target`, of `type`); the last produces the
// statement's value(s) with the capture's declared types, or, when `pick`
// is set, result `pick` of a tuple op is the statement's value.
struct AtenStep {
  std::string op;  // "aten.transpose.int"
  Expr call;       // callee "torch.ops.<op>", arguments in the ATen schema
  std::string target;
  std::optional<ir::TensorType> type;
  std::optional<int64_t> pick;
};

// What a call means for in-place mutation (fx_mutation.h): whether it
// mutates its first argument (`x.add_(y)`, `operator.iadd`,
// `F.relu(x, inplace = True)`: the argument's name is rebound to the
// result), and the value its result may share storage with (`x.view(...)`,
// `x[0]`, `x.contiguous()`: a view of x, or x itself;
// `torch.einsum('ij->ji', x)`: x permuted; ATen view ops called in a
// torch-level graph too). For a mutating call, viewOf names the mutated
// value (the result is that value).
struct TorchCallInfo {
  bool mutates = false;
  std::optional<std::string> viewOf;
  bool inPlaceView = false;  // `x.t_()`, `x.unsqueeze_(0)`: changes x's shape or strides
};
TorchCallInfo torchCallInfo(const Emitter& e, const Expr& call);

// The dtype torch computes a mutating call in, where its entry promotes:
// torch.result_type of the operands for add, sub, mul, div (an integer
// true division in f32), pow, floor division; the float an integer or
// bool operand of exp, log, sqrt, sigmoid, ... becomes. None for calls
// that compute in their operand's dtype; bool for comparisons and logical
// ops (an in-place one writes 1 and 0 in x's dtype). An in-place op writes that
// result cast back to the mutated tensor's dtype, which torch rejects
// where it cannot cast (canCast).
std::optional<ir::DType> inPlaceComputeType(Emitter& e, const Expr& call);

// Python's in-place operators and their out-of-place ones
// ("operator.iadd" -> "operator.add").
std::map<std::string, std::string> inPlaceOperators();

// Whether a call statement is torch-level (not `torch.ops.<ns>.<op>` nor a
// higher-order wrapper of one).
bool isTorchLevelCall(const Expr& call);

// The ATen steps that a torch-level call (or `operator.getitem` on a tensor)
// becomes; `target` names the statement's value (intermediates are named
// after it). Errors: fx-unsupported-op naming the callable when no entry
// translates it; fx-arg / fx-unsupported for arguments its entry rejects.
Result<std::vector<AtenStep>> translateTorchCall(Emitter& e, const Expr& call, const std::string& target);

// The table's entries, in order: the callables of each ("torch.matmul",
// "Tensor.view", "operator.add") and the ATen ops it can become
// ("aten.view.default"; "@index" for a lowering of several steps). For docs
// and tests.
struct TorchEntry {
  std::vector<std::string> names;
  std::vector<std::string> aten;
};
std::vector<TorchEntry> torchLevelEntries();

// ---- lowerings of several steps (fx_torch_lower.cpp) ----

// x[index] (`operator.getitem` of a tensor): one ATen view per index item.
Result<std::vector<AtenStep>> lowerTensorIndex(Emitter& e, const Expr& input, const Expr& index,
                                               const std::string& target, const Expr& at);
// x[index] = value (`operator.setitem`, which FX prints as `x[i] = v;
// setitem = x`): the steps of x's new value (fx_torch_setitem.cpp).
Result<std::vector<AtenStep>> lowerSetItem(Emitter& e, const Expr& input, const Expr& index, const Expr& value,
                                           const std::string& target, const Expr& at);
// F.cross_entropy (logSoftmax: log_softmax over the classes first) and
// F.nll_loss: nll_loss_forward, result 0.
struct NllArgs {
  const Expr &input, &target, &weight, &ignoreIndex, &reduction;
};
Result<std::vector<AtenStep>> lowerNllLoss(Emitter& e, const NllArgs& args, bool logSoftmax, const std::string& target,
                                           const Expr& at);

// Items of a subscript index, shared by x[i] and x[i] = v.
bool isEllipsisItem(const Expr& item);
bool isSliceItem(const Expr& item);  // `slice(a, b, c)`, `slice(stop)`
struct SliceBounds {
  int64_t start = 0, end = 0, step = 1, length = 0;
};
// The bounds of a slice item of `index` on `dim`, clamped as Python clamps
// them; none for the whole dim (where the dim may be symbolic).
Result<std::optional<SliceBounds>> sliceBounds(Emitter& e, const Expr& item, const Expr& index, const ir::Dim& dim);
// Position i (negative from the end) of dim d, which `index` selects or
// lists: in range, counted from 0; fx-index otherwise.
Result<int64_t> selectIndex(Emitter& e, int64_t i, const Expr& index, const ir::Dim& dim, int64_t d);
Expr intExpr(int64_t v);
Expr nameExpr(const std::string& name);

// A value of the capture that is a tensor (or a module constant).
bool isTensorValue(const Emitter& e, const Expr& x);
// `torch.ops.<op>(items, kws)` at the source position of `at`.
Expr atenCallExpr(const std::string& op, std::vector<Expr> items, std::vector<Kwarg> kws, const Expr& at);

}  // namespace sp::frontend::fx

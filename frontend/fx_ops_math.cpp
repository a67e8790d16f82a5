// Elementwise arithmetic, comparisons, logic, reductions and softmax.
// Operands are cast to the promoted dtype (torch.result_type); the declared
// result dtype must agree with it.
#include "frontend/fx_ops.h"

namespace sp::frontend::fx {

using ir::DType;
using ir::OpKind;
using ir::TensorType;

namespace {

Status checkPromotion(Emitter& e, DType computed, DType declared) {
  if (computed != declared)
    return e.error("type-mismatch", "operands promote to " + std::string(ir::dtypeName(computed)) +
                                        " but the result is declared " +
                                        std::string(ir::dtypeName(declared)));
  return okStatus();
}

// a op (alpha * b), optionally reversed (rsub: b - alpha * a).
Status arith(Emitter& e, OpKind op, bool reversed, bool trueDiv = false) {
  SP_ASSIGN(auto a, e.operand(0, "self"));
  SP_ASSIGN(auto b, e.operand(1, "other"));
  SP_ASSIGN(double alpha, e.number(2, "alpha", 1.0));
  SP_ASSIGN(TensorType t, e.outType(0));
  DType rt = resultType({a, b});
  if (trueDiv && !ir::isFloat(rt)) rt = DType::F32;
  SP_TRY(checkPromotion(e, rt, t.dtype));
  // torch: "For integral input tensors, argument alpha must not be a
  // floating point number" (a float alpha would be truncated here)
  if (const Expr* al = e.arg(2, "alpha"); al && al->kind == Expr::Kind::Float && !ir::isFloat(rt)) {
    std::string shown = al->str();
    if (shown.find_first_of(".ein") == std::string::npos) shown += ".0";
    return e.error("fx-type", "alpha " + shown + " is a floating point number but the operands are " +
                                  std::string(ir::dtypeName(rt)) + ": torch raises an error (for integral input "
                                  "tensors, argument alpha must not be a floating point number)");
  }
  TRef A = e.scalarOrCast(a, rt), B = e.scalarOrCast(b, rt);
  if (alpha != 1.0) {
    if (!b.t) B = e.constant(rt, alpha * b.value);
    else B = e.binary(OpKind::Mul, B, e.constant(rt, alpha));
  }
  if (reversed) std::swap(A, B);
  return e.out(0, op, {A, B});
}

const std::pair<const char*, OpKind> kUnary[] = {
    {"exp", OpKind::Exp},         {"log", OpKind::Log},   {"sigmoid", OpKind::Sigmoid},
    {"tanh", OpKind::Tanh},       {"sqrt", OpKind::Sqrt}, {"rsqrt", OpKind::Rsqrt},
    {"reciprocal", OpKind::Reciprocal}, {"erf", OpKind::Erf}, {"sin", OpKind::Sin},
    {"cos", OpKind::Cos},         {"silu", OpKind::Silu}, {"relu", OpKind::Relu},
    {"neg", OpKind::Neg},         {"abs", OpKind::Abs},   {"floor", OpKind::Floor},
    {"ceil", OpKind::Ceil},       {"sign", OpKind::Sign},
};

const std::pair<const char*, OpKind> kCompare[] = {
    {"lt", OpKind::Lt}, {"le", OpKind::Le}, {"gt", OpKind::Gt},
    {"ge", OpKind::Ge}, {"eq", OpKind::Eq}, {"ne", OpKind::Ne},
};

template <size_t N>
OpKind lookup(const std::pair<const char*, OpKind> (&table)[N], const std::string& name) {
  for (const auto& [n, k] : table)
    if (name == n) return k;
  SP_ASSERT(false, "fx op table and mapping disagree on " + name);
  return OpKind::Identity;
}

}  // namespace

Status mapAdd(Emitter& e) { return arith(e, OpKind::Add, false); }
Status mapSub(Emitter& e) { return arith(e, OpKind::Sub, false); }
Status mapRsub(Emitter& e) { return arith(e, OpKind::Sub, true); }
Status mapMul(Emitter& e) { return arith(e, OpKind::Mul, false); }
// maximum / minimum: elementwise, broadcasting, in the promoted dtype.
Status mapMaximum(Emitter& e) { return arith(e, baseName(e.op) == "maximum" ? OpKind::Max : OpKind::Min, false); }
Status mapDiv(Emitter& e) { return arith(e, OpKind::Div, false, true); }
Status mapPow(Emitter& e) {
  SP_ASSIGN(auto a, e.operand(0, "self"));
  SP_ASSIGN(auto b, e.operand(1, "exponent"));
  SP_ASSIGN(TensorType t, e.outType(0));
  SP_TRY(checkPromotion(e, resultType({a, b}), t.dtype));
  return e.out(0, OpKind::Pow, {e.scalarOrCast(a, t.dtype), e.scalarOrCast(b, t.dtype)});
}

Status mapPowScalarBase(Emitter& e) {
  SP_ASSIGN(auto a, e.operand(0, "self"));
  SP_ASSIGN(auto b, e.operand(1, "exponent"));
  SP_ASSIGN(TensorType t, e.outType(0));
  SP_TRY(checkPromotion(e, resultType({a, b}), t.dtype));
  return e.out(0, OpKind::Pow, {e.scalarOrCast(a, t.dtype), e.scalarOrCast(b, t.dtype)});
}

// div with rounding_mode: 'floor' -> floor(a / b); 'trunc' -> sign(q) * floor(|q|).
// Integer division is computed in f64 and cast back.
Status mapDivMode(Emitter& e) {
  SP_ASSIGN(std::string mode, e.string(2, "rounding_mode", std::string("none")));
  if (mode == "none") return arith(e, OpKind::Div, false, true);
  if (mode != "floor" && mode != "trunc")
    return e.error("fx-arg", "unknown rounding_mode '" + mode + "'");
  SP_ASSIGN(auto a, e.operand(0, "self"));
  SP_ASSIGN(auto b, e.operand(1, "other"));
  SP_ASSIGN(TensorType t, e.outType(0));
  SP_TRY(checkPromotion(e, resultType({a, b}), t.dtype));
  DType ct = ir::isFloat(t.dtype) ? t.dtype : DType::F64;
  TRef q = e.binary(OpKind::Div, e.scalarOrCast(a, ct), e.scalarOrCast(b, ct));
  if (mode == "trunc") {
    if (!ir::isFloat(t.dtype)) return e.out(0, OpKind::Cast, {q}, {{"to", t.dtype}});
    TRef f = e.unary(OpKind::Floor, e.unary(OpKind::Abs, q));
    return e.out(0, OpKind::Mul, {e.unary(OpKind::Sign, q), f});
  }
  if (ct == t.dtype) return e.out(0, OpKind::Floor, {q});
  return e.out(0, OpKind::Cast, {e.unary(OpKind::Floor, q)}, {{"to", t.dtype}});
}

Status mapUnaryFloat(Emitter& e) {
  SP_ASSIGN(TRef x, e.tensor(0, "self"));
  SP_ASSIGN(TensorType t, e.outType(0));
  return e.out(0, lookup(kUnary, baseName(e.op)), {e.cast(x, t.dtype)});
}

Status mapGelu(Emitter& e) {
  SP_ASSIGN(TRef x, e.tensor(0, "self"));
  SP_ASSIGN(std::string approx, e.string(1, "approximate", std::string("none")));
  if (approx != "none" && approx != "tanh")
    return e.error("fx-arg", "unknown gelu approximation '" + approx + "'");
  return e.out(0, OpKind::Gelu, {x}, {{"approximate", approx}});
}

// triu(x, diagonal) / tril(x, diagonal): the causal mask's constructor.
Status mapTriangle(Emitter& e) {
  SP_ASSIGN(TRef x, e.tensor(0, "self"));
  SP_ASSIGN(int64_t k, e.integer(1, "diagonal", 0));
  const int64_t upper = baseName(e.op) == "triu" ? 1 : 0;
  return e.out(0, OpKind::Trilu, {x}, {{"upper", upper}, {"k", k}});
}

// log1p(x) = log(1 + x), in x's (float) dtype.
Status mapLog1p(Emitter& e) {
  SP_ASSIGN(TRef x, e.tensor(0, "self"));
  SP_ASSIGN(TensorType t, e.outType(0));
  TRef xf = e.cast(x, t.dtype);
  return e.out(0, OpKind::Log, {e.binary(OpKind::Add, xf, e.constant(t.dtype, 1.0))});
}

// clamp_min(x, min) / clamp_max(x, max) with a number bound: clip.
Status mapClampBound(Emitter& e) {
  SP_ASSIGN(TRef x, e.tensor(0, "self"));
  SP_ASSIGN(TensorType t, e.outType(0));
  const bool lower = baseName(e.op) == "clamp_min";
  SP_ASSIGN(double b, e.number(1, lower ? "min" : "max"));
  return e.out(0, OpKind::Clip, {e.cast(x, t.dtype)}, {{lower ? "min" : "max", b}});
}

// topk(x, k, dim=-1, largest=True, sorted=True) -> (values, indices).
Status mapTopK(Emitter& e) {
  SP_ASSIGN(TRef x, e.tensor(0, "self"));
  SP_ASSIGN(int64_t k, e.integer(1, "k"));
  SP_ASSIGN(int64_t d, e.integer(2, "dim", -1));
  SP_ASSIGN(bool largest, e.boolean(3, "largest", true));
  SP_ASSIGN(bool sorted, e.boolean(4, "sorted", true));
  auto r = ir::normAxis(d, std::max<int64_t>(x.rank(), 1), e.op);
  if (!r) return e.error("fx-dim", r.error().message);
  return e.outAll(OpKind::TopK, {x},
                  {{"k", k}, {"axis", *r}, {"largest", int64_t(largest)}, {"sorted", int64_t(sorted)}}, 2);
}

Status mapClamp(Emitter& e) {
  SP_ASSIGN(TRef x, e.tensor(0, "self"));
  SP_ASSIGN(TensorType t, e.outType(0));
  ir::AttrMap a;
  if (e.has(1, "min")) { SP_ASSIGN(a["min"], e.number(1, "min")); }
  if (e.has(2, "max")) { SP_ASSIGN(a["max"], e.number(2, "max")); }
  return e.out(0, OpKind::Clip, {e.cast(x, t.dtype)}, a);
}

Status mapCompare(Emitter& e) {
  SP_ASSIGN(auto a, e.operand(0, "self"));
  SP_ASSIGN(auto b, e.operand(1, "other"));
  DType ct = resultType({a, b});
  return e.out(0, lookup(kCompare, baseName(e.op)), {e.scalarOrCast(a, ct), e.scalarOrCast(b, ct)});
}

// Bitwise ops on bool tensors and logical ops: and / or / xor on bool.
Status mapLogical(Emitter& e) {
  SP_ASSIGN(TRef a, e.tensor(0, "self"));
  SP_ASSIGN(TRef b, e.tensor(1, "other"));
  std::string n = baseName(e.op);
  bool logical = n.rfind("logical_", 0) == 0;
  if (!logical && (a.dtype() != DType::Bool || b.dtype() != DType::Bool))
    return e.error("fx-unsupported", n + " is supported on bool tensors only, got " + a.type.str() +
                                         " and " + b.type.str());
  OpKind k = n.ends_with("_or") ? OpKind::Or : n.ends_with("_and") ? OpKind::And : OpKind::Xor;
  return e.out(0, k, {e.cast(a, DType::Bool), e.cast(b, DType::Bool)});
}

Status mapNot(Emitter& e) {
  SP_ASSIGN(TRef a, e.tensor(0, "self"));
  if (baseName(e.op) == "bitwise_not" && a.dtype() != DType::Bool)
    return e.error("fx-unsupported", "bitwise_not is supported on bool tensors only, got " + a.type.str());
  return e.out(0, OpKind::Not, {e.cast(a, DType::Bool)});
}

Status mapWhere(Emitter& e) {
  SP_ASSIGN(TRef c, e.tensor(0, "condition"));
  SP_ASSIGN(auto a, e.operand(1, "self"));
  SP_ASSIGN(auto b, e.operand(2, "other"));
  SP_ASSIGN(TensorType t, e.outType(0));
  SP_TRY(checkPromotion(e, resultType({a, b}), t.dtype));
  return e.out(0, OpKind::Where, {e.cast(c, DType::Bool), e.scalarOrCast(a, t.dtype),
                                  e.scalarOrCast(b, t.dtype)});
}

Status mapMaskedFill(Emitter& e) {
  SP_ASSIGN(TRef x, e.tensor(0, "self"));
  SP_ASSIGN(TRef m, e.tensor(1, "mask"));
  SP_ASSIGN(auto v, e.operand(2, "value"));
  return e.out(0, OpKind::Where, {e.cast(m, DType::Bool), e.scalarOrCast(v, x.dtype()), x});
}

// sum/mean/amax/amin/max/min over all dims or a dim list (keepdim).
Status mapReduce(Emitter& e) {
  SP_ASSIGN(TRef x, e.tensor(0, "self"));
  SP_ASSIGN(TensorType t, e.outType(0));
  std::string n = baseName(e.op);
  OpKind k = n == "sum" ? OpKind::ReduceSum : n == "mean" ? OpKind::ReduceMean
           : (n == "amax" || n == "max") ? OpKind::ReduceMax : OpKind::ReduceMin;
  std::vector<int64_t> axes;
  bool keep = false;
  if (overloadName(e.op) != "default" || n == "amax" || n == "amin") {
    SP_ASSIGN(axes, e.ints(1, "dim", std::vector<int64_t>{}));
    SP_ASSIGN(keep, e.boolean(2, "keepdim", false));
  }
  for (auto& a : axes) {
    auto r = ir::normAxis(a, std::max<int64_t>(x.rank(), 1), e.op);
    if (!r) return e.error("fx-dim", r.error().message);
    a = *r;
  }
  std::sort(axes.begin(), axes.end());
  axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
  if (x.rank() == 0) return e.out(0, OpKind::Cast, {x}, {{"to", t.dtype}});
  return e.out(0, k, {e.cast(x, t.dtype)}, {{"axes", axes}, {"keepdims", int64_t(keep)}});
}

// max.dim / min.dim -> (values, indices).
Status mapMaxMinDim(Emitter& e) {
  SP_ASSIGN(TRef x, e.tensor(0, "self"));
  SP_ASSIGN(int64_t d, e.integer(1, "dim"));
  SP_ASSIGN(bool keep, e.boolean(2, "keepdim", false));
  auto r = ir::normAxis(d, x.rank(), e.op);
  if (!r) return e.error("fx-dim", r.error().message);
  bool isMax = baseName(e.op) == "max";
  if (e.wanted(0))
    SP_TRY(e.out(0, isMax ? OpKind::ReduceMax : OpKind::ReduceMin, {x},
                 {{"axes", std::vector<int64_t>{*r}}, {"keepdims", int64_t(keep)}}));
  if (e.wanted(1))
    SP_TRY(e.out(1, isMax ? OpKind::ArgMax : OpKind::ArgMin, {x},
                 {{"axis", *r}, {"keepdims", int64_t(keep)}}));
  return okStatus();
}

Status mapArgMax(Emitter& e) {
  SP_ASSIGN(TRef x, e.tensor(0, "self"));
  SP_ASSIGN(auto d, e.optInteger(1, "dim"));
  SP_ASSIGN(bool keep, e.boolean(2, "keepdim", false));
  if (!d) {
    auto n = ir::numElements(x.type.shape);
    TRef flat = e.reshape(x, {*n});
    return e.out(0, OpKind::ArgMax, {flat}, {{"axis", int64_t(0)}, {"keepdims", int64_t(0)}});
  }
  auto r = ir::normAxis(*d, x.rank(), e.op);
  if (!r) return e.error("fx-dim", r.error().message);
  return e.out(0, OpKind::ArgMax, {x}, {{"axis", *r}, {"keepdims", int64_t(keep)}});
}

Status mapSoftmax(Emitter& e) {
  SP_ASSIGN(TRef x, e.tensor(0, "self"));
  SP_ASSIGN(int64_t d, e.integer(1, "dim"));
  SP_ASSIGN(TensorType t, e.outType(0));
  auto r = ir::normAxis(d, std::max<int64_t>(x.rank(), 1), e.op);
  if (!r) return e.error("fx-dim", r.error().message);
  // _softmax(x, dim, half_to_float), softmax.int(x, dim, dtype): the
  // declared result type says the dtype either way
  const std::string b = baseName(e.op);
  OpKind k = b == "_softmax" || b == "softmax" ? OpKind::Softmax : OpKind::LogSoftmax;
  return e.out(0, k, {e.cast(x, t.dtype)}, {{"axis", *r}});
}

}  // namespace sp::frontend::fx

// Backward ATen ops expressed as compositions of IR ops.
#include <cmath>

#include "frontend/fx_ops.h"

namespace sp::frontend::fx {

using ir::DType;
using ir::OpKind;
using ir::TensorType;

namespace {

// Small expression helpers over one dtype.
struct Ops {
  Emitter& e;
  DType dt;
  TRef c(double v) const { return e.constant(dt, v); }
  TRef add(const TRef& a, const TRef& b) const { return e.binary(OpKind::Add, a, b); }
  TRef sub(const TRef& a, const TRef& b) const { return e.binary(OpKind::Sub, a, b); }
  TRef mul(const TRef& a, const TRef& b) const { return e.binary(OpKind::Mul, a, b); }
};

Result<int64_t> axisOf(Emitter& e, size_t i, const char* kw, int64_t rank) {
  SP_ASSIGN(int64_t d, e.integer(i, kw));
  auto r = ir::normAxis(d, std::max<int64_t>(rank, 1), e.op);
  if (!r) return e.error("fx-dim", r.error().message);
  return *r;
}

}  // namespace

// grad_in = y * (g - sum(g * y, dim, keepdim))
Status mapSoftmaxBackward(Emitter& e) {
  SP_ASSIGN(TensorType t, e.outType(0));
  SP_ASSIGN(TRef g, e.tensor(0, "grad_output"));
  SP_ASSIGN(TRef y, e.tensor(1, "output"));
  SP_ASSIGN(int64_t d, axisOf(e, 2, "dim", y.rank()));
  Ops o{e, t.dtype};
  g = e.cast(g, t.dtype);
  y = e.cast(y, t.dtype);
  TRef s = e.reduce(OpKind::ReduceSum, o.mul(g, y), {d}, true);
  return e.out(0, OpKind::Mul, {y, o.sub(g, s)});
}

// grad_in = g - exp(y) * sum(g, dim, keepdim)
Status mapLogSoftmaxBackward(Emitter& e) {
  SP_ASSIGN(TensorType t, e.outType(0));
  SP_ASSIGN(TRef g, e.tensor(0, "grad_output"));
  SP_ASSIGN(TRef y, e.tensor(1, "output"));
  SP_ASSIGN(int64_t d, axisOf(e, 2, "dim", y.rank()));
  Ops o{e, t.dtype};
  g = e.cast(g, t.dtype);
  y = e.cast(y, t.dtype);
  TRef s = e.reduce(OpKind::ReduceSum, g, {d}, true);
  return e.out(0, OpKind::Sub, {g, o.mul(e.unary(OpKind::Exp, y), s)});
}

// none: g * (Phi(x) + x * phi(x)); tanh: derivative of the tanh approximation.
Status mapGeluBackward(Emitter& e) {
  SP_ASSIGN(TensorType t, e.outType(0));
  SP_ASSIGN(TRef g, e.tensor(0, "grad_output"));
  SP_ASSIGN(TRef x, e.tensor(1, "self"));
  SP_ASSIGN(std::string approx, e.string(2, "approximate", std::string("none")));
  Ops o{e, t.dtype};
  g = e.cast(g, t.dtype);
  x = e.cast(x, t.dtype);
  if (approx == "none") {
    TRef cdf = o.mul(o.c(0.5), o.add(o.c(1), e.unary(OpKind::Erf, o.mul(x, o.c(M_SQRT1_2)))));
    TRef pdf = o.mul(e.unary(OpKind::Exp, o.mul(o.c(-0.5), o.mul(x, x))), o.c(0.5 * M_2_SQRTPI * M_SQRT1_2));
    return e.out(0, OpKind::Mul, {g, o.add(cdf, o.mul(x, pdf))});
  }
  if (approx != "tanh") return e.error("fx-arg", "unknown gelu approximation '" + approx + "'");
  const double k = std::sqrt(2.0 / M_PI), c = 0.044715;
  TRef x2 = o.mul(x, x);
  TRef inner = o.mul(o.c(k), o.add(x, o.mul(o.c(c), o.mul(x2, x))));
  TRef th = e.unary(OpKind::Tanh, inner);
  TRef dinner = o.mul(o.c(k), o.add(o.c(1), o.mul(o.c(3 * c), x2)));
  TRef left = o.mul(o.c(0.5), o.add(o.c(1), th));
  TRef right = o.mul(o.mul(o.c(0.5), x), o.mul(o.sub(o.c(1), o.mul(th, th)), dinner));
  return e.out(0, OpKind::Mul, {g, o.add(left, right)});
}

// g * y * (1 - y)
Status mapSigmoidBackward(Emitter& e) {
  SP_ASSIGN(TensorType t, e.outType(0));
  SP_ASSIGN(TRef g, e.tensor(0, "grad_output"));
  SP_ASSIGN(TRef y, e.tensor(1, "output"));
  Ops o{e, t.dtype};
  y = e.cast(y, t.dtype);
  return e.out(0, OpKind::Mul, {e.cast(g, t.dtype), o.mul(y, o.sub(o.c(1), y))});
}

// g * s * (1 + x * (1 - s)), s = sigmoid(x)
Status mapSiluBackward(Emitter& e) {
  SP_ASSIGN(TensorType t, e.outType(0));
  SP_ASSIGN(TRef g, e.tensor(0, "grad_output"));
  SP_ASSIGN(TRef x, e.tensor(1, "self"));
  Ops o{e, t.dtype};
  x = e.cast(x, t.dtype);
  TRef sg = e.unary(OpKind::Sigmoid, x);
  return e.out(0, OpKind::Mul, {e.cast(g, t.dtype), o.mul(sg, o.add(o.c(1), o.mul(x, o.sub(o.c(1), sg))))});
}

// g * (1 - y * y)
Status mapTanhBackward(Emitter& e) {
  SP_ASSIGN(TensorType t, e.outType(0));
  SP_ASSIGN(TRef g, e.tensor(0, "grad_output"));
  SP_ASSIGN(TRef y, e.tensor(1, "output"));
  Ops o{e, t.dtype};
  y = e.cast(y, t.dtype);
  return e.out(0, OpKind::Mul, {e.cast(g, t.dtype), o.sub(o.c(1), o.mul(y, y))});
}

// where(x <= threshold, 0, g)
Status mapThresholdBackward(Emitter& e) {
  SP_ASSIGN(TensorType t, e.outType(0));
  SP_ASSIGN(TRef g, e.tensor(0, "grad_output"));
  SP_ASSIGN(TRef x, e.tensor(1, "self"));
  SP_ASSIGN(double th, e.number(2, "threshold"));
  TRef m = e.binary(OpKind::Le, x, e.constant(x.dtype(), th));
  return e.out(0, OpKind::Where, {m, e.constant(t.dtype, 0), e.cast(g, t.dtype)});
}

// g * mask * scale
Status mapDropoutBackward(Emitter& e) {
  SP_ASSIGN(TensorType t, e.outType(0));
  SP_ASSIGN(TRef g, e.tensor(0, "grad_output"));
  SP_ASSIGN(TRef m, e.tensor(1, "mask"));
  SP_ASSIGN(double scale, e.number(2, "scale"));
  Ops o{e, t.dtype};
  TRef gm = o.mul(e.cast(g, t.dtype), e.cast(m, t.dtype));
  return e.out(0, OpKind::Mul, {gm, o.c(scale)});
}

// native_layer_norm_backward(g, x, normalized_shape, mean, rstd, w, b, mask):
//   xhat = (x - mean) * rstd, gx = g * w
//   grad_input  = rstd * (gx - mean_N(gx) - xhat * mean_N(gx * xhat))
//   grad_weight = sum_lead(g * xhat), grad_bias = sum_lead(g)
Status mapLayerNormBackward(Emitter& e) {
  SP_ASSIGN(TRef g, e.tensor(0, "grad_out"));
  SP_ASSIGN(TRef x, e.tensor(1, "input"));
  SP_ASSIGN(auto ns, e.ints(2, "normalized_shape"));
  SP_ASSIGN(TRef mean, e.tensor(3, "mean"));
  SP_ASSIGN(TRef rstd, e.tensor(4, "rstd"));
  SP_ASSIGN(auto w, e.optTensor(5, "weight"));
  int64_t axis = x.rank() - int64_t(ns.size());
  if (axis < 0 || ns.empty()) return e.error("fx-arg", "normalized_shape does not fit " + x.type.str());
  DType ct = promoteTypes(x.dtype(), rstd.dtype());
  Ops o{e, ct};
  std::vector<int64_t> normAxes, leadAxes;
  for (int64_t d = 0; d < x.rank(); ++d) (d < axis ? leadAxes : normAxes).push_back(d);
  ir::Shape ks = x.type.shape;
  for (int64_t d : normAxes) ks[size_t(d)] = ir::Dim(1);
  TRef gc = e.cast(g, ct);
  TRef mu = e.reshape(e.cast(mean, ct), ks), rs = e.reshape(e.cast(rstd, ct), ks);
  TRef xhat = o.mul(o.sub(e.cast(x, ct), mu), rs);
  if (e.wanted(0)) {
    TRef gx = w ? o.mul(gc, e.cast(*w, ct)) : gc;
    TRef m1 = e.reduce(OpKind::ReduceMean, gx, normAxes, true);
    TRef m2 = e.reduce(OpKind::ReduceMean, o.mul(gx, xhat), normAxes, true);
    TRef inner = o.sub(o.sub(gx, m1), o.mul(xhat, m2));
    SP_TRY(e.bind(0, OpKind::Mul, {rs, inner}, {}, TensorType{ct, x.type.shape}));
  }
  ir::Shape ps = ir::shapeOf(ns);
  for (size_t k : {size_t(1), size_t(2)}) {
    if (!e.wanted(k)) continue;
    TRef v = k == 1 ? o.mul(gc, xhat) : gc;
    if (leadAxes.empty()) {
      SP_TRY(e.bind(k, OpKind::Identity, {v}, {}, v.type));
    } else {
      SP_TRY(e.bind(k, OpKind::ReduceSum, {v}, {{"axes", leadAxes}, {"keepdims", int64_t(0)}},
                    TensorType{ct, ps}));
    }
  }
  return okStatus();
}

// embedding_dense_backward(g, indices, num_weights, padding_idx, scale_grad_by_freq):
// scatter-add of the rows of g into zeros[num_weights, D] at the indices;
// rows of padding_idx get no gradient.
Status mapEmbeddingBackward(Emitter& e) {
  SP_ASSIGN(TensorType t, e.outType(0));
  SP_ASSIGN(TRef g, e.tensor(0, "grad_output"));
  SP_ASSIGN(TRef idx, e.tensor(1, "indices"));
  SP_ASSIGN(int64_t pad, e.integer(3, "padding_idx", -1));
  SP_ASSIGN(bool byFreq, e.boolean(4, "scale_grad_by_freq", false));
  if (byFreq) return e.error("fx-unsupported", "embedding_dense_backward with scale_grad_by_freq");
  if (t.shape.size() != 2 || g.rank() != idx.rank() + 1)
    return e.error("fx-arg", "embedding gradient " + g.type.str() + " does not fit indices " + idx.type.str());
  auto m = ir::numElements(idx.type.shape);
  ir::Dim dd = t.shape[1];
  TRef gf = e.reshape(e.cast(g, t.dtype), {*m, dd});
  TRef flat = e.reshape(e.cast(idx, DType::I64), {*m});
  if (pad >= 0) {
    TRef isPad = e.unsqueeze(e.binary(OpKind::Eq, flat, e.constant(DType::I64, double(pad))), {1});
    gf = e.emit(OpKind::Where, {isPad, e.constant(t.dtype, 0), gf}, {}, gf.type, "where");
  }
  TRef ix = e.expand(e.reshape(flat, {*m, ir::Dim(1)}), {*m, dd});
  TRef zeros = e.expand(e.constant(t.dtype, 0), t.shape);
  return e.out(0, OpKind::ScatterElements, {zeros, ix, gf},
               {{"axis", int64_t(0)}, {"reduction", std::string("add")}});
}

}  // namespace sp::frontend::fx

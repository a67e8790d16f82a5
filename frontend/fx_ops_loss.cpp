// Negative log-likelihood (what F.cross_entropy lowers to under make_fx:
// _log_softmax, then nll_loss_forward) and its backward.
//
// nll_loss_forward(self, target, weight, reduction, ignore_index) ->
// (output, total_weight), self [N, C] (or [C] with a 0-d target): row b
// loses -w[t_b] * self[b, t_b], rows whose target is ignore_index lose 0 and
// do not count; reduction 0 none ([N]), 1 mean (sum / sum of the counted
// weights), 2 sum. total_weight is that sum of weights (0 for a batched
// none). Targets outside [0, C) other than ignore_index are an error in
// torch, so the capture never computed them.
//
// When self is _log_softmax(x, 1) of this capture the loss is the IR's
// cross_entropy(x, target[, weight]) with the same reduction and
// ignore_index: the interpreter's kernel skips ignored rows and divides the
// mean by the counted weight, as torch does (the verifier's lemmas cover
// cross_entropy; a nonnegative ignore_index stays unproven, docs/lemmas.md).
// Otherwise it is written out: a gather_elements of the target column with
// ignored rows masked to 0.
#include "frontend/fx_ops.h"

namespace sp::frontend::fx {

using ir::DType;
using ir::OpKind;
using ir::TensorType;

namespace {

const char* reductionName(int64_t r) { return r == 0 ? "none" : r == 1 ? "mean" : "sum"; }

// The arguments both ops share, batched: x [N, C], t [N] (i64), the
// ignore mask, the target with ignored rows set to class 0 (a valid read),
// and each row's counted weight (w[t] or 1, 0 where ignored).
struct Nll {
  TRef x, t, ignored, safeT;
  std::optional<TRef> w;
  int64_t reduction = 1, ignoreIndex = -100;
  bool batched = true;
  DType dt = DType::F32;
};

Result<Nll> nllArgs(Emitter& e, size_t selfPos, size_t first) {
  Nll n;
  SP_ASSIGN(n.x, e.tensor(selfPos, "self"));
  SP_ASSIGN(TRef t, e.tensor(first, "target"));
  SP_ASSIGN(n.w, e.optTensor(first + 1, "weight"));
  SP_ASSIGN(n.reduction, e.integer(first + 2, "reduction", 1));
  SP_ASSIGN(n.ignoreIndex, e.integer(first + 3, "ignore_index", -100));
  if (n.reduction < 0 || n.reduction > 2)
    return e.error("fx-arg", "reduction " + std::to_string(n.reduction) + " (0 none, 1 mean, 2 sum)");
  if (!ir::isFloat(n.x.dtype())) return e.error("fx-arg", "input must be floating point, got " + n.x.type.str());
  if (!ir::isInteger(t.dtype())) return e.error("fx-arg", "target must be an integer tensor, got " + t.type.str());
  n.batched = n.x.rank() == 2;
  if (!n.batched && n.x.rank() != 1)
    return e.error("fx-unsupported", e.op + " of a rank-" + std::to_string(n.x.rank()) +
                                         " input: only [N, C] or [C] (nll_loss2d_forward takes images)");
  if (t.rank() != n.x.rank() - 1 || (n.batched && t.type.shape[0] != n.x.type.shape[0]))
    return e.error("fx-arg", "target " + t.type.str() + " does not fit input " + n.x.type.str());
  n.dt = n.x.dtype();
  const ir::Dim& c = n.x.type.shape.back();
  if (n.w) {
    if (n.w->type.shape != ir::Shape{c})
      return e.error("fx-arg", "weight " + n.w->type.str() + " must have shape [" + c.str() + "]");
    n.w = e.cast(*n.w, n.dt);
  }
  n.t = e.cast(t, DType::I64);
  if (!n.batched) {
    n.x = e.unsqueeze(n.x, {0});
    n.t = e.unsqueeze(n.t, {0});
  }
  n.ignored = e.binary(OpKind::Eq, n.t, e.constant(DType::I64, double(n.ignoreIndex)));
  n.safeT = e.emit(OpKind::Where, {n.ignored, e.constant(DType::I64, 0), n.t}, {}, n.t.type, "target");
  return n;
}

// w[t_b] (or 1) for counted rows, 0 for ignored ones: [N].
TRef rowWeights(Emitter& e, const Nll& n) {
  TensorType rows{n.dt, n.t.type.shape};
  TRef one = e.expand(e.constant(n.dt, 1), rows.shape);
  TRef w = n.w ? e.emit(OpKind::Gather, {*n.w, n.safeT}, {{"axis", int64_t(0)}}, rows, "weight") : one;
  return e.emit(OpKind::Where, {n.ignored, e.constant(n.dt, 0), w}, {}, rows, "weight");
}

TRef totalWeight(Emitter& e, const Nll& n) {
  return e.reduce(OpKind::ReduceSum, rowWeights(e, n), {}, false);
}

// The input is _log_softmax(x, 1) of this capture: x, else none.
std::optional<TRef> logSoftmaxInput(Emitter& e, const TRef& self) {
  if (self.rank() != 2) return std::nullopt;
  const PendingOp* p = e.producer(self.name);
  if (!p || p->op != OpKind::LogSoftmax || p->inputs.size() != 1 || p->outputs.size() != 1 ||
      p->outputs[0] != self.name)
    return std::nullopt;
  auto a = p->attrs.find("axis");
  if (a == p->attrs.end() || std::get<int64_t>(a->second) != 1) return std::nullopt;
  // log_softmax keeps its input's type (mapSoftmax casts the input to it).
  return TRef{p->inputs[0], self.type};
}

}  // namespace

Status mapNllLossForward(Emitter& e) {
  SP_ASSIGN(Nll n, nllArgs(e, 0, 1));
  const ir::Dim& rows = n.t.type.shape[0];
  if (e.wanted(0)) {
    TRef loss;
    TensorType lt{n.dt, n.reduction == 0 ? ir::Shape{rows} : ir::Shape{}};
    if (auto logits = n.batched ? logSoftmaxInput(e, n.x) : std::nullopt) {
      std::vector<TRef> in = {*logits, n.t};
      if (n.w) in.push_back(*n.w);
      loss = e.emit(OpKind::CrossEntropy, in,
                    {{"reduction", std::string(reductionName(n.reduction))}, {"ignore_index", n.ignoreIndex}}, lt,
                    "cross_entropy");
    } else {
      TRef idx = e.unsqueeze(n.safeT, {1});
      TRef pick = e.emit(OpKind::GatherElements, {n.x, idx}, {{"axis", int64_t(1)}},
                         TensorType{n.dt, idx.type.shape}, "pick");
      pick = e.emit(OpKind::Squeeze, {pick}, {{"axes", std::vector<int64_t>{1}}}, TensorType{n.dt, {rows}}, "pick");
      TRef per = e.unary(OpKind::Neg, pick);
      if (n.w)
        per = e.binary(OpKind::Mul, per,
                       e.emit(OpKind::Gather, {*n.w, n.safeT}, {{"axis", int64_t(0)}}, per.type, "weight"));
      per = e.emit(OpKind::Where, {n.ignored, e.constant(n.dt, 0), per}, {}, per.type, "loss");
      if (n.reduction == 0) {
        loss = per;
      } else {
        loss = e.reduce(OpKind::ReduceSum, per, {}, false);
        if (n.reduction == 1) loss = e.binary(OpKind::Div, loss, totalWeight(e, n));
      }
    }
    if (!n.batched && n.reduction == 0) loss = e.reshape(loss, {});
    SP_TRY(e.outValue(0, loss));
  }
  if (e.wanted(1)) {
    // torch leaves total_weight 0 for a batched reduction none.
    TRef tw = n.batched && n.reduction == 0 ? e.constant(n.dt, 0) : totalWeight(e, n);
    SP_TRY(e.outValue(1, tw));
  }
  return okStatus();
}

// nll_loss_backward(grad_output, self, target, weight, reduction,
// ignore_index, total_weight): grad_input[b, c] = -w[t_b] * g_b where
// c == t_b and row b is counted, else 0; g_b = grad_output (sum),
// grad_output / total_weight (mean) or grad_output[b] (none).
Status mapNllLossBackward(Emitter& e) {
  SP_ASSIGN(TensorType ot, e.outType(0));
  SP_ASSIGN(TRef g, e.tensor(0, "grad_output"));
  SP_ASSIGN(Nll n, nllArgs(e, 1, 2));
  SP_ASSIGN(TRef tw, e.tensor(6, "total_weight"));
  const ir::Shape& xs = n.x.type.shape;  // [N, C]
  if (!xs[1].isConcrete()) return e.error("fx-unsupported", "nll_loss_backward with a symbolic class count");
  TensorType rows{n.dt, {xs[0]}};
  g = e.cast(g, n.dt);
  if (n.reduction == 0) {
    if (g.type.shape != ir::Shape{xs[0]} && !(!n.batched && g.rank() == 0))
      return e.error("fx-arg", "grad_output " + g.type.str() + " of a reduction none must have the target's shape");
    g = e.reshape(g, rows.shape);
  } else {
    if (g.rank() != 0) return e.error("fx-arg", "grad_output " + g.type.str() + " of a reduced loss must be a scalar");
    if (tw.rank() != 0) return e.error("fx-arg", "total_weight " + tw.type.str() + " must be a scalar");
    if (n.reduction == 1) g = e.binary(OpKind::Div, g, e.cast(tw, n.dt));
    g = e.expand(g, rows.shape);
  }
  TRef coef = e.unary(OpKind::Neg, g);
  if (n.w)
    coef = e.binary(OpKind::Mul, coef,
                    e.emit(OpKind::Gather, {*n.w, n.safeT}, {{"axis", int64_t(0)}}, rows, "weight"));
  coef = e.emit(OpKind::Where, {n.ignored, e.constant(n.dt, 0), coef}, {}, rows, "coef");
  TRef classes = e.emit(OpKind::Range, {},
                        {{"start", 0.0}, {"limit", double(xs[1].value())}, {"delta", 1.0}, {"dtype", DType::I64}},
                        TensorType{DType::I64, {xs[1]}}, "classes");
  TRef hit = e.binary(OpKind::Eq, e.unsqueeze(n.safeT, {1}), e.unsqueeze(classes, {0}));
  TRef grad = e.emit(OpKind::Where, {hit, e.unsqueeze(coef, {1}), e.constant(n.dt, 0)}, {},
                     TensorType{n.dt, xs}, "grad");
  if (!n.batched) grad = e.reshape(grad, {xs[1]});
  return e.outValue(0, e.cast(grad, ot.dtype));
}

}  // namespace sp::frontend::fx

// Linear algebra, normalization, dropout, factories and collectives.
#include <algorithm>
#include <cmath>
#include <limits>

#include "frontend/fx_ops.h"

namespace sp::frontend::fx {

using ir::DType;
using ir::OpKind;
using ir::TensorType;

namespace {

ir::Shape matmulShape(const TRef& a, const TRef& b) {
  ir::Shape s = a.type.shape;
  s.back() = b.type.shape.back();
  return s;
}

// Layer-norm statistics over dims [axis, rank): mean and 1/sqrt(var + eps),
// computed in the declared statistics dtype and bound to outputs 1 and 2.
Status normStats(Emitter& e, const TRef& x, int64_t axis, double eps, size_t meanOut,
                 size_t rstdOut, bool centered) {
  if (!e.wanted(meanOut) && !e.wanted(rstdOut)) return okStatus();
  SP_ASSIGN(TensorType st, e.outType(e.wanted(rstdOut) ? rstdOut : meanOut));
  std::vector<int64_t> axes;
  for (int64_t d = axis; d < x.rank(); ++d) axes.push_back(d);
  TRef xs = e.cast(x, st.dtype);
  ir::Shape ks = xs.type.shape;
  for (int64_t d : axes) ks[size_t(d)] = ir::Dim(1);
  TensorType kt{st.dtype, ks};
  ir::AttrMap ra{{"axes", axes}, {"keepdims", int64_t(1)}};
  std::optional<TRef> mean;
  if (centered) {
    if (e.wanted(meanOut)) {
      SP_ASSIGN(mean, e.bind(meanOut, OpKind::ReduceMean, {xs}, ra, kt));
      if (mean->type.shape != ks) mean = e.reshape(*mean, ks);
    } else {
      mean = e.reduce(OpKind::ReduceMean, xs, axes, true);
    }
  }
  if (!e.wanted(rstdOut)) return okStatus();
  TRef c = centered ? e.binary(OpKind::Sub, xs, *mean) : xs;
  TRef var = e.reduce(OpKind::ReduceMean, e.binary(OpKind::Mul, c, c), axes, true);
  TRef ve = e.binary(OpKind::Add, var, e.constant(st.dtype, eps));
  SP_TRY(e.bind(rstdOut, OpKind::Rsqrt, {ve}, {}, kt));
  return okStatus();
}

Result<int64_t> normAxisFor(Emitter& e, const TRef& x, const std::vector<int64_t>& ns) {
  int64_t axis = x.rank() - int64_t(ns.size());
  if (axis < 0 || ns.empty())
    return e.error("fx-arg", "normalized_shape of rank " + std::to_string(ns.size()) +
                                 " does not fit " + x.type.str());
  for (size_t k = 0; k < ns.size(); ++k)
    if (!(x.type.shape[size_t(axis) + k] == ir::Dim(ns[k])))
      return e.error("fx-arg", "normalized_shape does not match the trailing dims of " + x.type.str());
  return axis;
}

}  // namespace

Status mapMatMul(Emitter& e) {
  SP_ASSIGN(TRef a, e.tensor(0, "self"));
  SP_ASSIGN(TRef b, e.tensor(1, "mat2"));
  return e.out(0, OpKind::MatMul, {a, b});
}

// addmm / baddbmm: beta * self + alpha * (m1 @ m2). With beta = 0 the buffer
// is ignored (it may be uninitialized memory, as in Megatron's attention).
Status mapAddMM(Emitter& e) {
  SP_ASSIGN(TRef self, e.tensor(0, "self"));
  SP_ASSIGN(TRef a, e.tensor(1, baseName(e.op) == "addmm" ? "mat1" : "batch1"));
  SP_ASSIGN(TRef b, e.tensor(2, baseName(e.op) == "addmm" ? "mat2" : "batch2"));
  SP_ASSIGN(double beta, e.number(3, "beta", 1.0));
  SP_ASSIGN(double alpha, e.number(4, "alpha", 1.0));
  DType dt = a.dtype();
  if (beta == 0 && alpha == 1) return e.out(0, OpKind::MatMul, {a, b});
  TRef p = e.emit(OpKind::MatMul, {a, b}, {}, TensorType{dt, matmulShape(a, b)});
  if (beta == 0) return e.out(0, OpKind::Mul, {p, e.constant(dt, alpha)});
  if (alpha != 1) p = e.binary(OpKind::Mul, p, e.constant(dt, alpha));
  TRef s = e.cast(self, dt);
  if (beta != 1) s = e.binary(OpKind::Mul, s, e.constant(dt, beta));
  return e.out(0, OpKind::Add, {p, s});
}

Status mapLinear(Emitter& e) {
  SP_ASSIGN(TRef x, e.tensor(0, "input"));
  SP_ASSIGN(TRef w, e.tensor(1, "weight"));
  SP_ASSIGN(auto bias, e.optTensor(2, "bias"));
  if (w.rank() != 2) return e.error("fx-arg", "linear weight must be 2-d, got " + w.type.str());
  TRef wt = e.emit(OpKind::Transpose, {w}, {{"perm", std::vector<int64_t>{1, 0}}},
                   TensorType{w.dtype(), {w.type.shape[1], w.type.shape[0]}}, "wt");
  if (!bias) return e.out(0, OpKind::MatMul, {x, wt});
  TRef p = e.emit(OpKind::MatMul, {x, wt}, {}, TensorType{x.dtype(), matmulShape(x, wt)});
  return e.out(0, OpKind::Add, {p, *bias});
}

// native_layer_norm(x, normalized_shape, weight, bias, eps) -> (out, mean, rstd).
Status mapLayerNorm(Emitter& e) {
  SP_ASSIGN(TRef x, e.tensor(0, "input"));
  SP_ASSIGN(auto ns, e.ints(1, "normalized_shape"));
  SP_ASSIGN(auto w, e.optTensor(2, "weight"));
  SP_ASSIGN(auto b, e.optTensor(3, "bias"));
  // aten.layer_norm (torch.export's training IR): one result, eps 1e-5
  // unless given
  const bool one = baseName(e.op) == "layer_norm";
  SP_ASSIGN(double eps, e.number(4, "eps", one ? std::optional<double>(1e-5) : std::nullopt));
  SP_ASSIGN(int64_t axis, normAxisFor(e, x, ns));
  if (e.wanted(0)) {
    std::vector<TRef> in{x};
    if (b && !w) w = e.expand(e.constant(x.dtype(), 1.0), ir::shapeOf(ns));
    if (w) in.push_back(*w);
    if (b) in.push_back(*b);
    SP_TRY(e.out(0, OpKind::LayerNorm, in, {{"axis", axis}, {"epsilon", eps}}));
  }
  return normStats(e, x, axis, eps, 1, 2, true);
}

// rms_norm(input, normalized_shape, weight=None, eps=None) (torch.export's
// training IR): eps None is the machine epsilon of the input's dtype, as
// torch takes it.
Status mapRmsNorm(Emitter& e) {
  SP_ASSIGN(TRef x, e.tensor(0, "input"));
  SP_ASSIGN(auto ns, e.ints(1, "normalized_shape"));
  SP_ASSIGN(auto w, e.optTensor(2, "weight"));
  double machine = x.dtype() == DType::F64 ? 2.220446049250313e-16
                   : x.dtype() == DType::F16 ? 0.0009765625
                   : x.dtype() == DType::BF16 ? 0.0078125
                                              : 1.1920928955078125e-07;
  SP_ASSIGN(double eps, e.number(3, "eps", machine));
  SP_ASSIGN(int64_t axis, normAxisFor(e, x, ns));
  std::vector<TRef> in{x};
  if (w) in.push_back(*w);
  return e.out(0, OpKind::RmsNorm, in, {{"axis", axis}, {"epsilon", eps}});
}

// native_dropout(x, p, train) -> (y, mask); dropout(x, p, train) -> y. The random stream is explicit: a
// graph input `<node>_rng`, f32 uniform [0, 1) laid out like x.
Status mapDropout(Emitter& e) {
  SP_ASSIGN(TRef x, e.tensor(0, "input"));
  SP_ASSIGN(double p, e.number(1, "p"));
  SP_ASSIGN(bool train, e.boolean(2, "train", true));
  if (p < 0 || p > 1) return e.error("fx-arg", "dropout probability " + std::to_string(p) + " is outside [0, 1]");
  if (!train) {
    if (e.wanted(0)) SP_TRY(e.outValue(0, x));
    if (e.wanted(1))
      SP_TRY(e.out(1, OpKind::Expand, {e.constant(DType::Bool, 1)}, {{"shape", x.type.shape}}));
    return okStatus();
  }
  std::string rng = e.fresh(e.nodeName + "_rng");
  TensorType rt{DType::F32, x.type.shape};
  e.leaves.push_back({rng, rt, false, std::nullopt, e.src});
  return e.outAll(OpKind::Dropout, {x, TRef{rng, rt}}, {{"ratio", p}}, 2);
}

// zeros/ones/empty/full and their _like/new_ forms: a scalar constant
// expanded to the declared type. empty = zeros: an uninitialized buffer must
// be overwritten before it is read, so its value never matters.
Status mapFactory(Emitter& e) {
  SP_ASSIGN(TensorType t, e.outType(0));
  std::string n = baseName(e.op);
  double v = 0;
  if (n == "ones" || n == "ones_like" || n == "new_ones") v = 1;
  else if (n == "full") { SP_ASSIGN(v, e.number(1, "fill_value")); }
  else if (n == "full_like") { SP_ASSIGN(v, e.number(1, "fill_value")); }
  else if (n == "new_full") { SP_ASSIGN(v, e.number(2, "fill_value")); }
  else if (n == "scalar_tensor") { SP_ASSIGN(v, e.number(0, "s")); }
  else if (n == "fill" || n == "fill_") { SP_ASSIGN(v, e.number(1, "value")); }
  if (t.shape.empty())
    return e.out(0, OpKind::Constant, {}, {{"value", ir::Tensor::scalar(t.dtype, v)}});
  return e.out(0, OpKind::Expand, {e.constant(t.dtype, v)}, {{"shape", t.shape}});
}

// fill_(self, value): the filled buffer, which `self` names from here on
// too (a later read of the buffer sees the value, as in eager mode).
Status mapFillInPlace(Emitter& e) {
  const Expr* a = e.arg(0, "self");
  SP_TRY(mapFactory(e));
  if (a && a->kind == Expr::Kind::Name && e.wanted(0)) e.env[a->s] = e.env[e.outNames[0]];
  return okStatus();
}

Status mapArange(Emitter& e) {
  SP_ASSIGN(TensorType t, e.outType(0));
  double start = 0, end = 0, step = 1;
  std::string ov = overloadName(e.op);
  if (ov == "default") {
    SP_ASSIGN(end, e.number(0, "end"));
  } else {
    SP_ASSIGN(start, e.number(0, "start"));
    SP_ASSIGN(end, e.number(1, "end"));
    if (ov == "start_step") { SP_ASSIGN(step, e.number(2, "step", 1.0)); }
  }
  if (step == 0) return e.error("fx-arg", "arange step is zero");
  return e.out(0, OpKind::Range, {},
               {{"start", start}, {"limit", end}, {"delta", step}, {"dtype", t.dtype}});
}

static Result<std::string> reduceOpName(Emitter& e) {
  SP_ASSIGN(std::string r, e.string(1, "reduceOp"));
  std::transform(r.begin(), r.end(), r.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  if (r != "sum" && r != "avg" && r != "max" && r != "min")
    return e.error("fx-unsupported", "reduce op '" + r + "' is not supported (sum, avg, max, min)");
  return r;
}

// c10d functional collectives. The group id (last argument) maps to an IR
// group through FxOptions; gathers and scatters act on dim 0.
Status mapCollective(Emitter& e) {
  std::string n = baseName(e.op);
  SP_ASSIGN(TRef x, e.tensor(0, "input"));
  size_t gi = n == "all_reduce" || n == "all_gather_into_tensor" || n == "broadcast" ? 2
              : 3;
  SP_ASSIGN(std::string g, e.string(gi, "group_name"));
  SP_ASSIGN(std::string group, e.groupFor(g));
  SP_ASSIGN(int64_t size, e.groupSize(group));
  if (n == "all_gather_into_tensor" || n == "reduce_scatter_tensor") {
    SP_ASSIGN(int64_t captured, e.integer(gi - 1, "group_size"));
    if (captured != size)
      return e.error("fx-group", "c10d group '" + g + "' has " + std::to_string(captured) +
                                     " ranks in the capture but maps to '" + group + "' of " +
                                     std::to_string(size) + " ranks");
  }
  // A collective over one rank (Megatron's sequential run keeps its TP
  // all-reduces over a group of one) is the identity.
  if (size == 1) {
    if (n == "all_reduce" || n == "reduce_scatter_tensor") { SP_TRY(reduceOpName(e)); }
    return e.outValue(0, x);
  }
  auto reduceOp = [&]() { return reduceOpName(e); };
  if (n == "all_reduce") {
    SP_ASSIGN(std::string r, reduceOp());
    return e.out(0, OpKind::AllReduce, {x}, {{"group", group}, {"reduce", r}});
  }
  if (n == "all_gather_into_tensor")
    return e.out(0, OpKind::AllGather, {x}, {{"group", group}, {"dim", int64_t(0)}});
  if (n == "reduce_scatter_tensor") {
    SP_ASSIGN(std::string r, reduceOp());
    return e.out(0, OpKind::ReduceScatter, {x}, {{"group", group}, {"dim", int64_t(0)}, {"reduce", r}});
  }
  if (n == "all_to_all_single") {
    for (size_t k : {size_t(1), size_t(2)}) {
      if (!e.has(k, k == 1 ? "output_split_sizes" : "input_split_sizes")) continue;
      SP_ASSIGN(auto sizes, e.ints(k, k == 1 ? "output_split_sizes" : "input_split_sizes"));
      for (int64_t s : sizes)
        if (s != sizes[0])
          return e.error("fx-unsupported", "all_to_all_single with unequal splits is not supported");
    }
    return e.out(0, OpKind::AllToAll, {x},
                 {{"group", group}, {"split_dim", int64_t(0)}, {"concat_dim", int64_t(0)}});
  }
  // broadcast(input, src, group): src is a global rank; IR wants its index in the group.
  SP_ASSIGN(int64_t src, e.integer(1, "src"));
  int64_t root = src;
  if (auto it = e.opts.namedGroups.find(group); it != e.opts.namedGroups.end()) {
    root = -1;
    for (const auto& members : it->second)
      for (size_t k = 0; k < members.size(); ++k)
        if (members[k] == src) root = int64_t(k);
  } else if (const ir::MeshAxis* ax = e.opts.mesh.axis(group)) {
    size_t idx = size_t(ax - e.opts.mesh.axes.data());
    if (src >= 0 && src < e.opts.mesh.worldSize()) root = e.opts.mesh.coords(src)[idx];
  } else if (group.find('+') != std::string::npos) {
    return e.error("fx-unsupported", "broadcast over the multi-axis group '" + group + "'");
  }
  if (root < 0) return e.error("fx-group", "broadcast source rank " + std::to_string(src) +
                                               " is not in group '" + group + "'");
  return e.out(0, OpKind::Broadcast, {x}, {{"group", group}, {"root", root}});
}

}  // namespace sp::frontend::fx

namespace sp::frontend::fx {

// Scaled dot-product attention, in the four spellings captures show:
//   scaled_dot_product_attention(q, k, v, attn_mask=None, dropout_p=0.0,
//     is_causal=False, *, scale=None, enable_gqa=False) -> out
//   _scaled_dot_product_flash_attention_for_cpu(q, k, v, dropout_p=0.0,
//     is_causal=False, *, attn_mask=None, scale=None) -> (out, logsumexp)
//   _scaled_dot_product_efficient_attention(q, k, v, attn_bias,
//     compute_log_sumexp, dropout_p=0.0, is_causal=False, *, scale=None)
//     -> (out, log_sumexp, philox_seed, philox_offset)
//   _scaled_dot_product_flash_attention(q, k, v, dropout_p=0.0,
//     is_causal=False, return_debug_mask=False, *, scale=None)
//     -> (out, logsumexp, cum_seq_q, cum_seq_k, max_q, max_k, philox_seed,
//         philox_offset, debug_attn_mask)
// as torch's math reference computes it: s = q kᵀ · scale (default
// 1/sqrt(E)); a boolean mask keeps where true (-inf elsewhere), a float one
// is added; is_causal keeps column j <= row i (torch's tril of ones(L, S));
// softmax over the keys; times v. enable_gqa repeats each KV head for its
// query heads (repeat_interleave on dim -3). The log-sum-exp output is
// log Σ exp(s) per query row. Dropout (p > 0), the random seeds and the
// varlen outputs are rejected: they are not this computation.
namespace {

// The attention's masked, scaled scores s = q kᵀ · scale (+ mask) and their
// softmax p over the keys (last dim), as torch's math reference computes
// them; the shared part of the fused kernels and their backward.
struct Scores {
  TRef s, p;
};
Result<Scores> attentionScores(Emitter& e, const TRef& q, const TRef& k, const std::optional<TRef>& mask,
                               bool causal, std::optional<double> scale) {
  const int64_t R = q.rank();
  const ir::Dim E = q.type.shape.back(), L = q.type.shape[size_t(R - 2)], S = k.type.shape[size_t(R - 2)];
  if (!E.isConcrete() || !L.isConcrete() || !S.isConcrete())
    return e.error("fx-arg", "attention over symbolic sizes (" + q.type.str() + ", " + k.type.str() + ")");
  std::vector<int64_t> perm;
  for (int64_t d = 0; d < R; ++d) perm.push_back(d);
  std::swap(perm[size_t(R - 1)], perm[size_t(R - 2)]);
  ir::Shape kts = k.type.shape;
  std::swap(kts[size_t(R - 1)], kts[size_t(R - 2)]);
  TRef kt = e.emit(OpKind::Transpose, {k}, {{"perm", perm}}, TensorType{k.dtype(), kts}, "kt");
  ir::Shape ss = q.type.shape;
  ss.back() = S;
  TRef s0 = e.emit(OpKind::MatMul, {q, kt}, {}, TensorType{q.dtype(), ss}, "scores");
  TRef s = e.binary(OpKind::Mul, s0, e.constant(q.dtype(), scale ? *scale : 1.0 / std::sqrt(double(E.value()))));
  const double ninf = -std::numeric_limits<double>::infinity();
  if (causal) {
    auto idx = [&](int64_t n, ir::Shape shape) {
      TRef r = e.emit(OpKind::Range, {},
                      {{"start", int64_t(0)}, {"limit", n}, {"delta", int64_t(1)}, {"dtype", DType::I64}},
                      TensorType{DType::I64, {ir::Dim(n)}}, "pos");
      return e.reshape(r, shape);
    };
    TRef row = idx(L.value(), {L, ir::Dim(1)}), col = idx(S.value(), {ir::Dim(1), S});
    TRef keep = e.emit(OpKind::Ge, {row, col}, {}, TensorType{DType::Bool, {L, S}}, "causal");
    s = e.emit(OpKind::Where, {keep, s, e.constant(s.dtype(), ninf)}, {}, s.type, "causal_mask");
  }
  if (mask) {
    if (mask->dtype() == DType::Bool)
      s = e.emit(OpKind::Where, {*mask, s, e.constant(s.dtype(), ninf)}, {}, s.type, "mask");
    else
      s = e.binary(OpKind::Add, s, e.cast(*mask, s.dtype()));
    if (!(s.type.shape == ss)) return e.error("fx-arg", "attn_mask " + mask->type.str() + " does not broadcast to the scores");
  }
  TRef p = e.emit(OpKind::Softmax, {s}, {{"axis", R - 1}}, s.type, "probs");
  return Scores{s, p};
}

}  // namespace

Status mapSdpa(Emitter& e) {
  const std::string base = e.op.substr(0, e.op.rfind('.'));
  const bool plain = base == "aten.scaled_dot_product_attention";
  const bool cpuFlash = base == "aten._scaled_dot_product_flash_attention_for_cpu";
  const bool efficient = base == "aten._scaled_dot_product_efficient_attention";
  SP_ASSIGN(TRef q, e.tensor(0, "query"));
  SP_ASSIGN(TRef k, e.tensor(1, "key"));
  SP_ASSIGN(TRef v, e.tensor(2, "value"));
  std::optional<TRef> mask;
  double dropout = 0;
  bool causal = false, gqa = false;
  if (plain) {
    SP_ASSIGN(mask, e.optTensor(3, "attn_mask"));
    SP_ASSIGN(dropout, e.number(4, "dropout_p", 0.0));
    SP_ASSIGN(causal, e.boolean(5, "is_causal", false));
    SP_ASSIGN(gqa, e.boolean(7, "enable_gqa", false));
  } else if (efficient) {
    SP_ASSIGN(mask, e.optTensor(3, "attn_bias"));
    SP_ASSIGN(dropout, e.number(5, "dropout_p", 0.0));
    SP_ASSIGN(causal, e.boolean(6, "is_causal", false));
  } else {
    SP_ASSIGN(dropout, e.number(3, "dropout_p", 0.0));
    SP_ASSIGN(causal, e.boolean(4, "is_causal", false));
    if (cpuFlash) { SP_ASSIGN(mask, e.optTensor(5, "attn_mask")); }
  }
  std::optional<double> scale;
  const size_t scaleAt = efficient ? 7 : 6;
  if (e.has(scaleAt, "scale")) {
    const Expr* s = e.arg(scaleAt, "scale");
    if (s->kind != Expr::Kind::None) { SP_ASSIGN(scale, e.number(scaleAt, "scale")); }
  }
  if (dropout != 0.0)
    return e.error("fx-arg", "attention dropout (dropout_p = " + std::to_string(dropout) +
                                 ") draws a random mask the capture does not show: capture with dropout off");
  for (size_t o = 2; o < e.outNames.size(); ++o)
    if (e.wanted(o))
      return e.error("fx-unsupported-op", "output " + std::to_string(o) + " of " + e.op +
                                              " (random seeds, varlen offsets or the debug mask) is not computed");
  if (q.rank() < 2 || k.rank() != q.rank() || v.rank() != q.rank())
    return e.error("fx-arg", "query, key and value must have one rank >= 2, got " + q.type.str() + ", " +
                                 k.type.str() + ", " + v.type.str());
  const int64_t R = q.rank();
  // GQA: each KV head repeated for the query heads it serves.
  auto repeatHeads = [&](const TRef& x) -> Result<TRef> {
    if (!gqa || R < 3 || x.type.shape[size_t(R - 3)] == q.type.shape[size_t(R - 3)]) return x;
    const ir::Dim hq = q.type.shape[size_t(R - 3)], hk = x.type.shape[size_t(R - 3)];
    if (!hq.isConcrete() || !hk.isConcrete() || hq.value() % hk.value())
      return e.error("fx-arg", "enable_gqa: query heads " + hq.str() + " not a multiple of key heads " + hk.str());
    TRef u = e.unsqueeze(x, {R - 2});
    ir::Shape es = u.type.shape;
    es[size_t(R - 2)] = ir::Dim(hq.value() / hk.value());
    ir::Shape rs = x.type.shape;
    rs[size_t(R - 3)] = hq;
    return e.reshape(e.expand(u, es), rs);
  };
  SP_ASSIGN(k, repeatHeads(k));
  SP_ASSIGN(v, repeatHeads(v));
  SP_ASSIGN(Scores sc, attentionScores(e, q, k, mask, causal, scale));
  const TRef& s = sc.s;
  const TRef& p = sc.p;
  if (e.wanted(0)) {
    ir::Shape os = q.type.shape;
    os.back() = v.type.shape.back();
    SP_TRY(e.bind(0, OpKind::MatMul, {p, v}, {}, TensorType{q.dtype(), os}));
  }
  if (e.wanted(1)) {
    // log Σ exp(s) per query row, in the declared dtype (f32), [..., L]
    SP_ASSIGN(TensorType lt, e.outType(1));
    TRef sf = e.cast(s, lt.dtype);
    TRef m = e.reduce(OpKind::ReduceMax, sf, {R - 1}, true);
    TRef z = e.reduce(OpKind::ReduceSum, e.unary(OpKind::Exp, e.binary(OpKind::Sub, sf, m)), {R - 1}, true);
    TRef lse = e.binary(OpKind::Add, e.unary(OpKind::Log, z), m);
    ir::Shape ls = q.type.shape;
    ls.pop_back();
    SP_TRY(e.bind(1, OpKind::Reshape, {lse}, {{"shape", ls}}, TensorType{lt.dtype, ls}));
  }
  return okStatus();
}

// The fused attention kernels' backward (AOTAutograd joint and backward
// graphs of a model using F.scaled_dot_product_attention):
//   _scaled_dot_product_flash_attention_for_cpu_backward(grad_out, query,
//     key, value, out, logsumexp, dropout_p, is_causal, *, attn_mask=None,
//     scale=None) -> (grad_query, grad_key, grad_value)
//   _scaled_dot_product_flash_attention_backward(grad_out, query, key,
//     value, out, logsumexp, cum_seq_q, cum_seq_k, max_q, max_k, dropout_p,
//     is_causal, philox_seed, philox_offset, *, scale=None) -> (same)
//   _scaled_dot_product_efficient_attention_backward(grad_out_, query, key,
//     value, attn_bias, out, logsumexp, philox_seed, philox_offset,
//     dropout_p, grad_input_mask, is_causal=False, *, scale=None)
//     -> (grad_query, grad_key, grad_value, grad_bias)
// The probabilities p are recomputed from q, k and the mask as the forward
// computes them (out and logsumexp are the forward's own results, not
// needed); then dv = pᵀ dO, dp = dO vᵀ, ds = p (dp - Σ_keys dp p),
// dq = ds k · scale, dk = dsᵀ q · scale. Dropout and the bias's gradient
// are rejected.
Status mapSdpaBackward(Emitter& e) {
  const std::string base = e.op.substr(0, e.op.rfind('.'));
  const bool cpuFlash = base == "aten._scaled_dot_product_flash_attention_for_cpu_backward";
  const bool efficient = base == "aten._scaled_dot_product_efficient_attention_backward";
  SP_ASSIGN(TRef g, e.tensor(0, efficient ? "grad_out_" : "grad_out"));
  SP_ASSIGN(TRef q, e.tensor(1, "query"));
  SP_ASSIGN(TRef k, e.tensor(2, "key"));
  SP_ASSIGN(TRef v, e.tensor(3, "value"));
  std::optional<TRef> mask;
  double dropout = 0;
  bool causal = false;
  size_t scaleAt = 0;
  if (cpuFlash) {
    SP_ASSIGN(dropout, e.number(6, "dropout_p", 0.0));
    SP_ASSIGN(causal, e.boolean(7, "is_causal", false));
    SP_ASSIGN(mask, e.optTensor(8, "attn_mask"));
    scaleAt = 9;
  } else if (efficient) {
    SP_ASSIGN(mask, e.optTensor(4, "attn_bias"));
    SP_ASSIGN(dropout, e.number(9, "dropout_p", 0.0));
    SP_ASSIGN(causal, e.boolean(11, "is_causal", false));
    scaleAt = 12;
  } else {
    SP_ASSIGN(dropout, e.number(10, "dropout_p", 0.0));
    SP_ASSIGN(causal, e.boolean(11, "is_causal", false));
    scaleAt = 14;
  }
  std::optional<double> scale;
  if (const Expr* a = e.arg(scaleAt, "scale"); a && a->kind != Expr::Kind::None) {
    SP_ASSIGN(scale, e.number(scaleAt, "scale"));
  }
  if (dropout != 0.0)
    return e.error("fx-arg", "attention dropout (dropout_p = " + std::to_string(dropout) +
                                 ") draws a random mask the capture does not show: capture with dropout off");
  if (e.wanted(3)) return e.error("fx-unsupported-op", "the attention bias's gradient (output 3 of " + e.op + ")");
  const int64_t R = q.rank();
  if (R < 2 || k.rank() != R || v.rank() != R || g.rank() != R || !(k.type.shape == v.type.shape) ||
      (R >= 3 && k.type.shape[size_t(R - 3)] != q.type.shape[size_t(R - 3)]))
    return e.error("fx-arg", "attention backward over query " + q.type.str() + ", key " + k.type.str() +
                                 ", value " + v.type.str() + ": one rank, keys and values alike, as many heads");
  SP_ASSIGN(Scores sc, attentionScores(e, q, k, mask, causal, scale));
  const TRef& p = sc.p;
  const double c = scale ? *scale : 1.0 / std::sqrt(double(q.type.shape.back().value()));
  auto swapLast = [&](const TRef& x) {
    std::vector<int64_t> perm;
    for (int64_t d = 0; d < R; ++d) perm.push_back(d);
    std::swap(perm[size_t(R - 1)], perm[size_t(R - 2)]);
    ir::Shape sh = x.type.shape;
    std::swap(sh[size_t(R - 1)], sh[size_t(R - 2)]);
    return e.emit(OpKind::Transpose, {x}, {{"perm", perm}}, TensorType{x.dtype(), sh}, "t");
  };
  auto mm = [&](const TRef& a, const TRef& b, const char* tag) {
    ir::Shape sh = a.type.shape;
    sh.back() = b.type.shape.back();
    return e.emit(OpKind::MatMul, {a, b}, {}, TensorType{a.dtype(), sh}, tag);
  };
  if (e.wanted(2)) { SP_TRY(e.bind(2, OpKind::MatMul, {swapLast(p), g}, {}, TensorType{v.dtype(), v.type.shape})); }
  if (!e.wanted(0) && !e.wanted(1)) return okStatus();
  TRef dp = mm(g, swapLast(v), "dprobs");
  TRef rowSum = e.reduce(OpKind::ReduceSum, e.binary(OpKind::Mul, dp, p), {R - 1}, true);
  TRef ds = e.binary(OpKind::Mul, p, e.binary(OpKind::Sub, dp, rowSum));
  TRef dsc = e.binary(OpKind::Mul, ds, e.constant(ds.dtype(), c));
  if (e.wanted(0)) { SP_TRY(e.bind(0, OpKind::MatMul, {dsc, k}, {}, TensorType{q.dtype(), q.type.shape})); }
  if (e.wanted(1)) { SP_TRY(e.bind(1, OpKind::MatMul, {swapLast(dsc), q}, {}, TensorType{k.dtype(), k.type.shape})); }
  return okStatus();
}

}  // namespace sp::frontend::fx

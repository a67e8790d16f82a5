// Symbolic meaning of IR ops in lemma proofs: elementwise (exact real
// arithmetic or uninterpreted functions), matmul, reductions and norms as
// smt folds, transpose as index permutation.
#include <algorithm>

#include "rewrite/lemma/lemma_symbolic.h"

namespace sp::rewrite::symbolic {

Result<SymTensor> Builder::buildIr(const Pattern& p, std::vector<SymTensor>& xs) {
  using ir::OpKind;
  smt::Context* zc = &z;
  const ir::OpInfo& info = ir::opInfo(p.irOp);
  // Variable float attributes: dropout's ratio and the norms' epsilon only
  // (a norm's axis=?e is a dim variable, pinned per proof).
  for (const auto& a : p.attrs)
    if (a.kind == PatAttr::Kind::Var && !a.list && !(p.irOp == OpKind::Dropout && a.name == "ratio") &&
        !(info.category == ir::OpCategory::Norm && a.name == "epsilon") && !isDimVarAttr(p, a))
      return makeError("unsupported-op", std::string(info.name) + ": attribute '" + a.name +
                                             "' is a variable, which only dropout's ratio and a norm's epsilon may be");
  if (auto r = buildIndexOp(p, xs)) return std::move(*r);
  if (p.irOp == OpKind::Unsqueeze || p.irOp == OpKind::Squeeze) return unitDims(p, xs[0]);
  for (auto& x : xs) x = asReal(x);  // arithmetic is over reals (a bool counts as 0/1)
  auto elementwise1 = [&](std::function<Term(Term)> f) {
    SymTensor out = xs[0], x = xs[0];
    out.at = [x, f](const std::vector<Term>& idx) { return f(x.at(idx)); };
    return out;
  };
  if (info.category == ir::OpCategory::Unary) {
    switch (p.irOp) {
      case OpKind::Neg: return elementwise1([zc](Term v) { return zc->neg(v); });
      case OpKind::Identity: return elementwise1([](Term v) { return v; });
      case OpKind::Abs: return elementwise1([zc](Term v) { return zc->ite(zc->ge(v, zc->realVal(int64_t(0), 1)), v, zc->neg(v)); });
      case OpKind::Relu: return elementwise1([zc](Term v) { return zc->ite(zc->gt(v, zc->realVal(int64_t(0), 1)), v, zc->realVal(int64_t(0), 1)); });
      case OpKind::Reciprocal: return elementwise1([zc](Term v) { return zc->realDiv(zc->realVal(int64_t(1), 1), v); });
      // cast(x, to=T) rounds the value to T: a function of the value alone
      // (a bool is 0/1), uninterpreted, one per target dtype.
      case OpKind::Cast: {
        const PatAttr* to = p.attr("to");
        if (!to || to->kind != PatAttr::Kind::Str) return makeError("unsupported-attr", "cast needs a literal 'to'");
        std::string key = "cast.to=" + to->text;
        return elementwise1([this, key](Term v) { return uf1(key, v); });
      }
      case OpKind::Not: return makeError("unsupported-op", std::string(info.name) + " has no smt meaning");
      default: {
        std::string key(info.name);
        for (const auto& a : p.attrs) key += "." + a.name + "=" + (a.kind == PatAttr::Kind::Str ? a.text : std::to_string(a.f));
        return elementwise1([this, key](Term v) { return uf1(key, v); });
      }
    }
  }
  if (info.category == ir::OpCategory::Binary) {
    Broadcast bc = broadcast(xs[0].shape, xs[1].shape);
    wf->insert(wf->end(), bc.wf.begin(), bc.wf.end());
    SymTensor out, a = xs[0], b = xs[1];
    out.shape = bc.shape;
    std::function<Term(Term, Term)> f;
    switch (p.irOp) {
      case OpKind::Add: f = [](Term x, Term y) { return x + y; }; break;
      case OpKind::Sub: f = [](Term x, Term y) { return x - y; }; break;
      case OpKind::Mul: f = [](Term x, Term y) { return x * y; }; break;
      case OpKind::Div: f = [zc](Term x, Term y) { return zc->realDiv(x, y); }; break;
      case OpKind::Max: f = [zc](Term x, Term y) { return zc->ite(zc->ge(x, y), x, y); }; break;
      case OpKind::Min: f = [zc](Term x, Term y) { return zc->ite(zc->le(x, y), x, y); }; break;
      default: {
        smt::Func g = z.func("op." + std::string(info.name), {smt::Sort::Real, smt::Sort::Real}, smt::Sort::Real);
        f = [zc, g](Term x, Term y) { return zc->apply(g, {x, y}); };
      }
    }
    out.at = [zc, a, b, f, bc](const std::vector<Term>& idx) {
      return f(a.at(Broadcast::index(*zc, a.shape, bc.directA, idx, bc.oneA)), b.at(Broadcast::index(*zc, b.shape, bc.directB, idx, bc.oneB)));
    };
    return out;
  }
  if (p.irOp == OpKind::MatMul) return matmul(xs[0], xs[1]);
  if (p.irOp == OpKind::Dropout) {
    // Output 0 only: elementwise in (input, stream), same shapes (the IR's
    // typing), an uninterpreted function per ratio. A variable ratio (?p)
    // is a function of its own, the same for every use of ?p: proven for
    // every function, the lemma holds whatever value ?p matches, and
    // independently of the functions of other ratios.
    if (xs[0].shape.size() != xs[1].shape.size()) wf->push_back(i(0) == i(1));  // ill typed: vacuous
    else sameShape(xs[0], xs[1]);
    const PatAttr* r = p.attr("ratio");
    std::string key = r && r->kind == PatAttr::Kind::Var
                          ? "?" + r->text
                          : std::to_string(r ? (r->kind == PatAttr::Kind::Float ? r->f : double(r->i)) : 0.5);
    smt::Func g = z.func("op.dropout.ratio=" + key, {smt::Sort::Real, smt::Sort::Real}, smt::Sort::Real);
    SymTensor out = xs[0], a = xs[0], b = xs[1];
    out.at = [zc, g, a, b](const std::vector<Term>& idx) { return zc->apply(g, {a.at(idx), b.at(idx)}); };
    return out;
  }
  if (info.category == ir::OpCategory::Reduce) return reduce(p, xs[0]);
  if (info.category == ir::OpCategory::Norm) return norm(p, xs);
  if (p.irOp == OpKind::Transpose) {
    SymTensor out, x = xs[0];
    std::vector<int64_t> perm = p.attr("perm") ? p.attr("perm")->ints : std::vector<int64_t>{};
    if (perm.empty())  // the IR default: reverse the dims
      for (size_t k = x.shape.size(); k-- > 0;) perm.push_back(int64_t(k));
    std::vector<int64_t> sorted = perm;
    std::sort(sorted.begin(), sorted.end());
    for (size_t k = 0; k < sorted.size(); ++k)
      if (sorted.size() != x.shape.size() || sorted[k] != int64_t(k))
        return makeError("bad-permutation", "perm is not a permutation of rank " + std::to_string(x.shape.size()));
    for (int64_t q2 : perm) out.shape.push_back(x.shape[size_t(q2)]);
    out.at = [x, perm](const std::vector<Term>& idx) {
      std::vector<Term> j(idx.size());
      for (size_t k = 0; k < perm.size(); ++k) j[size_t(perm[k])] = idx[k];
      return x.at(j);
    };
    return out;
  }
  return makeError("unsupported-op", std::string(info.name) + " has no smt meaning in lemma proofs");
}

// An op variable of a trait stands for every op of the trait, each a
// function of the element values at the same (broadcast) index: a proof with
// one uninterpreted function per variable holds for every such op.
Result<SymTensor> Builder::opVar(const Pattern& p, std::vector<SymTensor>& xs) {
  smt::Context* zc = &z;
  for (auto& x : xs) x = asReal(x);
  if (p.trait == OpTrait::Unary && xs.size() == 1) {
    smt::Func f = z.func("opvar.?" + p.name, {smt::Sort::Real}, smt::Sort::Real);
    SymTensor out = xs[0], x = xs[0];
    out.at = [zc, f, x](const std::vector<Term>& idx) { return zc->apply(f, {x.at(idx)}); };
    return out;
  }
  if (p.trait == OpTrait::Binary && xs.size() == 2) {
    Broadcast bc = broadcast(xs[0].shape, xs[1].shape);
    wf->insert(wf->end(), bc.wf.begin(), bc.wf.end());
    smt::Func f = z.func("opvar.?" + p.name, {smt::Sort::Real, smt::Sort::Real}, smt::Sort::Real);
    SymTensor out, a = xs[0], b = xs[1];
    out.shape = bc.shape;
    out.at = [zc, f, a, b, bc](const std::vector<Term>& idx) {
      return zc->apply(f, {a.at(Broadcast::index(*zc, a.shape, bc.directA, idx, bc.oneA)),
                           b.at(Broadcast::index(*zc, b.shape, bc.directB, idx, bc.oneB))});
    };
    return out;
  }
  return makeError("unsupported-op", "op variable ?" + p.name + " of trait " + opTraitName(p.trait));
}

// unsqueeze inserts unit dims (axes count in the output rank); squeeze drops
// listed dims, which the IR's typing requires to be of size 1 (axes count in
// the input rank). Literal axes only: squeeze without axes depends on sizes.
Result<SymTensor> Builder::unitDims(const Pattern& p, const SymTensor& x) {
  bool un = p.irOp == ir::OpKind::Unsqueeze;
  const PatAttr* a = p.attr("axes");
  if (!a || a->kind != PatAttr::Kind::Ints || a->ints.empty())
    return makeError("unsupported-attr", p.name + " needs literal axes in lemma proofs");
  size_t big = un ? x.shape.size() + a->ints.size() : x.shape.size();
  std::vector<bool> unit(big, false);
  for (int64_t v : a->ints) {
    SP_ASSIGN(int64_t d, normDim(v, big));
    if (unit[size_t(d)]) return makeError("bad-axes", p.name + ": repeated axis " + std::to_string(v));
    unit[size_t(d)] = true;
  }
  SymTensor out;
  out.isBool = x.isBool;
  out.isInt = x.isInt;
  Term zero = i(0);
  size_t q = 0;
  for (size_t d = 0; d < big; ++d) {
    if (un) out.shape.push_back(unit[d] ? i(1) : x.shape[q++]);
    else if (unit[d]) wf->push_back(x.shape[d] == i(1));
    else out.shape.push_back(x.shape[d]);
  }
  out.at = [x, unit, un, zero](const std::vector<Term>& idx) {
    std::vector<Term> j;
    size_t k = 0;
    for (size_t d = 0; d < unit.size(); ++d) {
      if (un) { if (!unit[d]) j.push_back(idx[d]); }
      else j.push_back(unit[d] ? zero : idx[k++]);
    }
    return x.at(j);
  };
  return out;
}

// Numpy matmul: a rank-1 a is [1, K] and b [K, 1] (the dim removed after);
// batch dims broadcast.
Result<SymTensor> Builder::matmul(SymTensor a, SymTensor b) {
  if (a.shape.empty() || b.shape.empty()) return makeError("rank-too-small", "matmul operands need rank >= 1");
  bool vecA = a.shape.size() == 1, vecB = b.shape.size() == 1;
  if (vecA) {
    SymTensor v = a;
    a.shape = {i(1), v.shape[0]};
    a.at = [v](const std::vector<Term>& idx) { return v.at({idx[1]}); };
  }
  if (vecB) {
    SymTensor v = b;
    b.shape = {v.shape[0], i(1)};
    b.at = [v](const std::vector<Term>& idx) { return v.at({idx[0]}); };
  }
  size_t ra = a.shape.size(), rb = b.shape.size();
  std::vector<Term> batchA(a.shape.begin(), a.shape.end() - 2), batchB(b.shape.begin(), b.shape.end() - 2);
  Broadcast bc = broadcast(batchA, batchB);
  wf->insert(wf->end(), bc.wf.begin(), bc.wf.end());
  wf->push_back(a.shape[ra - 1] == b.shape[rb - 2]);
  SymTensor out;
  out.shape = bc.shape;
  size_t nb = bc.shape.size();
  out.shape.push_back(a.shape[ra - 2]);
  out.shape.push_back(b.shape[rb - 1]);
  Term k = a.shape[ra - 1];
  smt::Context* zc = &z;
  out.at = [zc, a, b, k, nb, batchA, batchB, bc](const std::vector<Term>& idx) {
    Term t = zc->freshInt("k");
    std::vector<Term> batch(idx.begin(), idx.begin() + long(nb));
    auto ia = Broadcast::index(*zc, batchA, bc.directA, batch, bc.oneA), ib = Broadcast::index(*zc, batchB, bc.directB, batch, bc.oneB);
    ia.push_back(idx[nb]);
    ia.push_back(t);
    ib.push_back(t);
    ib.push_back(idx[nb + 1]);
    return zc->fold(smt::FoldOp::Sum, t, zc->intVal(0), k, a.at(ia) * b.at(ib));
  };
  if (vecA || vecB) {  // drop the inserted dims
    SymTensor full = out;
    size_t r = full.shape.size();
    out.shape.clear();
    for (size_t d = 0; d < r; ++d)
      if (!((vecA && d == r - 2) || (vecB && d == r - 1))) out.shape.push_back(full.shape[d]);
    Term zero = i(0);
    out.at = [full, r, vecA, vecB, zero](const std::vector<Term>& idx) {
      std::vector<Term> j;
      size_t q = 0;
      for (size_t d = 0; d < r; ++d) j.push_back((vecA && d == r - 2) || (vecB && d == r - 1) ? zero : idx[q++]);
      return full.at(j);
    };
  }
  return out;
}

Result<SymTensor> Builder::reduce(const Pattern& p, const SymTensor& x) {
  using ir::OpKind;
  smt::FoldOp fop;
  switch (p.irOp) {
    case OpKind::ReduceSum: case OpKind::ReduceMean: fop = smt::FoldOp::Sum; break;
    case OpKind::ReduceMax: fop = smt::FoldOp::Max; break;
    case OpKind::ReduceMin: fop = smt::FoldOp::Min; break;
    default: return makeError("unsupported-op", p.name + " has no smt meaning in lemma proofs");
  }
  size_t r = x.shape.size();
  std::vector<int64_t> axes;
  const PatAttr* a = p.attr("axes");
  if (a && a->kind == PatAttr::Kind::Var) {  // axes=[?e]
    SP_ASSIGN(int64_t d, pinnedDim(a->text, r));
    axes.push_back(d);
  } else if (!a || a->ints.empty()) {
    for (size_t d = 0; d < r; ++d) axes.push_back(int64_t(d));
  } else {
    for (int64_t v : a->ints) { SP_ASSIGN(int64_t d, normDim(v, r)); axes.push_back(d); }
  }
  std::sort(axes.begin(), axes.end());
  if (std::adjacent_find(axes.begin(), axes.end()) != axes.end())
    return makeError("bad-axes", p.name + ": repeated axis for rank " + std::to_string(r));
  const PatAttr* kd = p.attr("keepdims");
  bool keep = !kd || kd->i != 0;
  SymTensor out;
  std::vector<bool> red(r, false);
  for (int64_t d : axes) red[size_t(d)] = true;
  for (size_t d = 0; d < r; ++d) {
    if (!red[d]) out.shape.push_back(x.shape[d]);
    else if (keep) out.shape.push_back(i(1));
  }
  bool mean = p.irOp == OpKind::ReduceMean;
  smt::Context* zc = &z;
  std::vector<Term>* sink = reads;
  out.at = [zc, sink, x, red, keep, fop, mean, r](const std::vector<Term>& idx) {
    std::vector<Term> j(r);
    size_t q = 0;
    std::vector<std::pair<Term, size_t>> bound;
    for (size_t d = 0; d < r; ++d) {
      if (!red[d]) j[d] = idx[q++];
      else {
        if (keep) ++q;
        // A reduced dim of literal size 1 is read at 0 (a fold over one element is it).
        if (Broadcast::isOne(*zc, x.shape[d])) { j[d] = zc->intVal(0); continue; }
        j[d] = zc->freshInt("r");
        bound.emplace_back(j[d], d);
      }
    }
    size_t readsBefore = sink ? sink->size() : 0;
    Term v = x.at(j);
    Term count = zc->intVal(1);
    std::vector<std::pair<Term, Term>> binders;
    for (size_t b = bound.size(); b-- > 0;) {
      v = zc->fold(fop, bound[b].first, zc->intVal(0), x.shape[bound[b].second], v);
      count = count * x.shape[bound[b].second];
      binders.emplace_back(bound[b].first, x.shape[bound[b].second]);
    }
    foldReads(*zc, sink, readsBefore, binders);
    if (mean) v = zc->realDiv(v, zc->toReal(count));
    return v;
  };
  return out;
}

Result<SymTensor> Builder::norm(const Pattern& p, std::vector<SymTensor>& xs) {
  using ir::OpKind;
  SymTensor x = xs[0];
  size_t r = x.shape.size();
  const PatAttr* ax = p.attr("axis");
  int64_t axis = 0;
  if (ax && ax->kind == PatAttr::Kind::Var) {  // axis=?e: pinned per proof
    SP_ASSIGN(axis, pinnedDim(ax->text, r));
  } else {
    SP_ASSIGN(axis, normDim(ax ? ax->i : -1, r));
  }
  smt::Context* zc = &z;
  if (p.irOp == OpKind::Softmax || p.irOp == OpKind::LogSoftmax) {
    bool logv = p.irOp == OpKind::LogSoftmax;
    SymTensor out = x;
    out.at = [this, zc, x, axis, logv](const std::vector<Term>& idx) {
      Term t = zc->freshInt("s");
      auto j = idx;
      j[size_t(axis)] = t;
      Term denom = zc->fold(smt::FoldOp::Sum, t, zc->intVal(0), x.shape[size_t(axis)], uf1("exp", x.at(j)));
      return logv ? x.at(idx) - uf1("log", denom) : zc->realDiv(uf1("exp", x.at(idx)), denom);
    };
    return out;
  }
  if (size_t(axis) != r - 1) return makeError("unsupported-op", p.name + " proofs need axis=-1");
  std::vector<std::vector<bool>> wdirect;
  // Weights broadcast to the normalized shape [n]: rank 0, or rank 1 of size n or 1.
  for (size_t k = 1; k < xs.size(); ++k) {
    if (xs[k].shape.size() > 1)
      return makeError("rank-mismatch", p.name + ": weight of rank " + std::to_string(xs[k].shape.size()) +
                                            " does not broadcast to the normalized shape of rank 1");
    Broadcast bc = broadcast(xs[k].shape, {x.shape[r - 1]});
    if (!bc.directA.empty() && !bc.directA[0])  // a weight may broadcast into the row, not beyond it
      wf->push_back(z.or_({xs[k].shape[0] == x.shape[r - 1], xs[k].shape[0] == i(1)}));
    wdirect.push_back(bc.directA);
  }
  const PatAttr* ep = p.attr("epsilon");
  double epsv = ep ? ep->f : (p.irOp == OpKind::LayerNorm ? 1e-5 : 1e-6);
  // A variable epsilon (?e) is a Real unknown, the same for every use of ?e.
  Term eps = ep && ep->kind == PatAttr::Kind::Var ? z.realVar("attr." + ep->text) : z.realVal(epsv);
  bool layer = p.irOp == OpKind::LayerNorm;
  std::vector<SymTensor> w(xs.begin() + 1, xs.end());
  SymTensor out = x;
  out.at = [this, zc, x, r, eps, layer, w, wdirect](const std::vector<Term>& idx) {
    Term n = zc->toReal(x.shape[r - 1]);
    auto at = [&](Term t) { auto j = idx; j[r - 1] = t; return x.at(j); };
    Term t1 = zc->freshInt("n");
    Term mean = zc->realDiv(zc->fold(smt::FoldOp::Sum, t1, zc->intVal(0), x.shape[r - 1], at(t1)), n);
    Term v;
    if (layer) {
      Term t2 = zc->freshInt("n");
      Term dev = at(t2) - mean;
      Term var = zc->realDiv(zc->fold(smt::FoldOp::Sum, t2, zc->intVal(0), x.shape[r - 1], dev * dev), n);
      v = (x.at(idx) - mean) * uf1("rsqrt", var + eps);
    } else {
      Term t2 = zc->freshInt("n");
      Term ms = zc->realDiv(zc->fold(smt::FoldOp::Sum, t2, zc->intVal(0), x.shape[r - 1], at(t2) * at(t2)), n);
      v = x.at(idx) * uf1("rsqrt", ms + eps);
    }
    std::vector<Term> last{idx[r - 1]};
    if (!w.empty()) v = v * w[0].at(Broadcast::index(*zc, w[0].shape, wdirect[0], last));
    if (w.size() > 1) v = v + w[1].at(Broadcast::index(*zc, w[1].shape, wdirect[1], last));
    return v;
  };
  return out;
}

}  // namespace sp::rewrite::symbolic

// Proofs of lemmas with Z3 (through rewrite/smt). A tensor is a symbolic
// shape (Int terms) and a value function from index terms to a Real term.
// Variables are uninterpreted functions; layout ops are index arithmetic;
// add/sub/mul/neg/scale/div/max/min/relu/abs are exact real arithmetic; other
// elementwise ops are uninterpreted functions; reductions, matmul and norms
// use smt folds. Binary IR ops, matmul batch dims and norm weights broadcast
// as in the IR (numpy); the relation operators sum and concat need equal
// shapes (off the concat dim). The goal: under the side conditions and the
// left side being well typed as IR, the right side is well typed, has the
// same shape, and equals the left side at every index in bounds.
#include <algorithm>
#include <chrono>
#include <random>
#include <set>
#include <sstream>

#include "rewrite/lemma.h"
#include "rewrite/smt/smt.h"

namespace sp::rewrite {

namespace {

using smt::Term;

struct SymTensor {
  std::vector<Term> shape;
  std::function<Term(const std::vector<Term>&)> at;
};

struct Unsupported { std::string why; };

// Numpy broadcasting of two shapes: well-typedness facts, output shape and,
// per operand dim, whether it may broadcast (read index 0 when its size is 1)
// or is known to equal the output dim (read the output index).
struct Broadcast {
  std::vector<Term> shape;
  std::vector<Term> wf;
  std::vector<bool> directA, directB;
  // Index into an operand of shape `xs` for an output index (aligned right).
  static std::vector<Term> index(smt::Context& z, const std::vector<Term>& xs, const std::vector<bool>& direct,
                                 const std::vector<Term>& idx) {
    std::vector<Term> j;
    size_t off = idx.size() - xs.size();
    for (size_t k = 0; k < xs.size(); ++k)
      j.push_back(direct[k] ? idx[k + off] : z.ite(xs[k] == z.intVal(1), z.intVal(0), idx[k + off]));
    return j;
  }
};

struct Builder {
  smt::Context& z;
  int defaultRank;
  std::map<std::string, int> ranks;             // rank of every tensor variable (this instance)
  std::map<std::string, SymTensor> vars;
  std::vector<Term>* wf = nullptr;              // well-formedness facts of the side being built
  // Facts known to hold (conditions, left side typing): a broadcast pair of
  // dims they prove equal is encoded without the size-1 case, which keeps
  // fold bodies syntactically equal. Empty: no simplification.
  std::vector<Term> facts;
  unsigned timeoutMs = 20000;
  std::optional<std::string> error;             // structural: not applicable / unsupported
  std::map<std::string, int64_t> fixedInts;     // split sizes: the value this proof is for

  // A split/merge size: a literal, or a variable pinned for this proof.
  std::optional<int64_t> sizeAttr(const Pattern& p) {
    const PatAttr* a = p.attr("size");
    if (a->kind != PatAttr::Kind::Var) return a->i;
    if (auto it = fixedInts.find(a->text); it != fixedInts.end()) return it->second;
    return std::nullopt;
  }

  Term i(int64_t v) { return z.intVal(v); }

  Result<int64_t> normDim(int64_t d, size_t rank) {
    if (d < -int64_t(rank) || d >= int64_t(rank))
      return makeError("dim-out-of-range", "dim " + std::to_string(d) + " out of range for rank " + std::to_string(rank));
    return d < 0 ? d + int64_t(rank) : d;
  }

  Result<Term> attrInt(const Pattern& p, const std::string& n);

  void sameShape(const SymTensor& a, const SymTensor& b) {
    for (size_t d = 0; d < a.shape.size(); ++d) wf->push_back(a.shape[d] == b.shape[d]);
  }

  Result<SymTensor> var(const std::string& name) {
    if (auto it = vars.find(name); it != vars.end()) return it->second;
    int r = ranks.count(name) ? ranks[name] : defaultRank;
    SymTensor t;
    std::vector<smt::Sort> dom;
    for (int d = 0; d < r; ++d) {
      t.shape.push_back(z.intVar(name + ".size" + std::to_string(d)));
      dom.push_back(smt::Sort::Int);
    }
    smt::Func f = z.func("tensor." + name, dom, smt::Sort::Real);
    smt::Context* zc = &z;
    t.at = [zc, f](const std::vector<Term>& idx) { return zc->apply(f, idx); };
    vars[name] = t;
    return t;
  }

  bool provablyEqual(Term x, Term y) {
    if (x.id() == y.id()) return true;
    return !facts.empty() && z.check(facts, x == y, {timeoutMs}).verdict == smt::Verdict::Proved;
  }

  Broadcast broadcast(const std::vector<Term>& a, const std::vector<Term>& b) {
    Broadcast out;
    size_t r = std::max(a.size(), b.size());
    out.directA.assign(a.size(), true);
    out.directB.assign(b.size(), true);
    Term one = z.intVal(1);
    for (size_t d = 0; d < r; ++d) {
      bool hasA = d >= r - a.size(), hasB = d >= r - b.size();
      if (!(hasA && hasB)) {
        out.shape.push_back(hasA ? a[d - (r - a.size())] : b[d - (r - b.size())]);
        continue;
      }
      size_t ka = d - (r - a.size()), kb = d - (r - b.size());
      Term x = a[ka], y = b[kb];
      if (provablyEqual(x, y)) { out.shape.push_back(x); continue; }
      out.wf.push_back(z.or_({x == y, x == one, y == one}));
      out.shape.push_back(z.ite(x == one, y, x));
      out.directA[ka] = out.directB[kb] = false;
    }
    return out;
  }

  Term uf1(const std::string& name, Term x) {
    return z.apply(z.func("op." + name, {smt::Sort::Real}, smt::Sort::Real), {x});
  }

  Result<SymTensor> build(const Pattern& p);
  Result<SymTensor> buildIr(const Pattern& p, std::vector<SymTensor>& xs);
  Result<SymTensor> reduce(const Pattern& p, const SymTensor& x);
  Result<SymTensor> matmul(SymTensor a, SymTensor b);
  Result<SymTensor> norm(const Pattern& p, std::vector<SymTensor>& xs);
};

Result<Term> condTerm(Builder& b, const CondTerm& t);

Result<Term> Builder::attrInt(const Pattern& p, const std::string& n) {
  const PatAttr* a = p.attr(n);
  if (a->kind == PatAttr::Kind::Var) {
    if (auto it = fixedInts.find(a->text); it != fixedInts.end()) return i(it->second);
    return z.intVar(a->text);
  }
  if (a->kind == PatAttr::Kind::Expr) return condTerm(*this, *a->expr);
  return i(a->i);
}

Result<SymTensor> Builder::build(const Pattern& p) {
  if (p.op == PatOp::Var) return var(p.name);
  std::vector<SymTensor> xs;
  for (const auto& a : p.args) {
    SP_ASSIGN(SymTensor t, build(*a));
    xs.push_back(std::move(t));
  }
  bool sameRank = p.op == PatOp::Concat || p.op == PatOp::Sum;
  for (size_t k = 1; sameRank && k < xs.size(); ++k)
    if (xs[k].shape.size() != xs[0].shape.size())
      return makeError("rank-mismatch", p.name + ": operands have ranks " + std::to_string(xs[0].shape.size()) +
                                            " and " + std::to_string(xs[k].shape.size()));
  smt::Context* zc = &z;
  switch (p.op) {
    case PatOp::Concat: {
      SP_ASSIGN(int64_t d, normDim(p.attr("dim")->i, xs[0].shape.size()));
      SymTensor out = xs[0];
      std::vector<Term> offs{i(0)};
      for (size_t k = 1; k < xs.size(); ++k) {
        for (size_t e = 0; e < out.shape.size(); ++e)
          if (int64_t(e) != d) wf->push_back(xs[k].shape[e] == xs[0].shape[e]);
        offs.push_back(offs.back() + xs[k - 1].shape[size_t(d)]);
        out.shape[size_t(d)] = out.shape[size_t(d)] + xs[k].shape[size_t(d)];
      }
      out.at = [zc, xs, offs, d](const std::vector<Term>& idx) {
        auto shifted = [&](size_t k) { auto j = idx; j[size_t(d)] = j[size_t(d)] - offs[k]; return xs[k].at(j); };
        Term v = shifted(xs.size() - 1);
        for (size_t k = xs.size() - 1; k-- > 0;) v = zc->ite(idx[size_t(d)] < offs[k + 1], shifted(k), v);
        return v;
      };
      return out;
    }
    case PatOp::Sum: {
      for (size_t k = 1; k < xs.size(); ++k) sameShape(xs[0], xs[k]);
      SymTensor out = xs[0];
      out.at = [xs](const std::vector<Term>& idx) {
        Term v = xs[0].at(idx);
        for (size_t k = 1; k < xs.size(); ++k) v = v + xs[k].at(idx);
        return v;
      };
      return out;
    }
    case PatOp::Slice: {
      SP_ASSIGN(int64_t d, normDim(p.attr("dim")->i, xs[0].shape.size()));
      SP_ASSIGN(Term s, attrInt(p, "start"));
      SP_ASSIGN(Term e, attrInt(p, "end"));
      wf->push_back(i(0) <= s);
      wf->push_back(s <= e);
      wf->push_back(e <= xs[0].shape[size_t(d)]);
      SymTensor out = xs[0];
      out.shape[size_t(d)] = e - s;
      SymTensor x = xs[0];
      out.at = [x, s, d](const std::vector<Term>& idx) { auto j = idx; j[size_t(d)] = j[size_t(d)] + s; return x.at(j); };
      return out;
    }
    case PatOp::Scale: {
      const PatAttr* a = p.attr("factor");
      Term f = a->kind == PatAttr::Kind::Var ? z.realVar(a->text) : z.realVal(a->f);
      SymTensor out = xs[0], x = xs[0];
      out.at = [x, f](const std::vector<Term>& idx) { return f * x.at(idx); };
      return out;
    }
    case PatOp::Permute: {
      const auto& perm = p.attr("perm")->ints;
      size_t r = xs[0].shape.size();
      std::vector<int64_t> sorted = perm;
      std::sort(sorted.begin(), sorted.end());
      for (size_t k = 0; k < sorted.size(); ++k)
        if (sorted.size() != r || sorted[k] != int64_t(k))
          return makeError("bad-permutation", "perm is not a permutation of rank " + std::to_string(r));
      SymTensor out, x = xs[0];
      for (int64_t q : perm) out.shape.push_back(x.shape[size_t(q)]);
      out.at = [x, perm](const std::vector<Term>& idx) {
        std::vector<Term> j(idx.size());
        for (size_t k = 0; k < perm.size(); ++k) j[size_t(perm[k])] = idx[k];
        return x.at(j);
      };
      return out;
    }
    case PatOp::SplitLast: case PatOp::MergeLast: {
      auto k = sizeAttr(p);
      if (!k) return makeError("unsupported-op", p.name + ": size must be a literal or bounded by the conditions");
      if (*k < 1) return makeError("bad-size", p.name + ": size must be >= 1");
      SymTensor x = xs[0], out = xs[0];
      size_t r = x.shape.size();
      int64_t kk = *k;
      if (p.op == PatOp::SplitLast) {
        if (r < 1) return makeError("rank-too-small", "split_last needs rank >= 1");
        wf->push_back(z.modConst(x.shape[r - 1], kk) == i(0));
        out.shape[r - 1] = z.divConst(x.shape[r - 1], kk);
        out.shape.push_back(i(kk));
        out.at = [zc, x, r, kk](const std::vector<Term>& idx) {
          std::vector<Term> j(idx.begin(), idx.begin() + long(r - 1));
          j.push_back(zc->mulConst(idx[r - 1], kk) + idx[r]);
          return x.at(j);
        };
      } else {
        if (r < 2) return makeError("rank-too-small", "merge_last needs rank >= 2");
        wf->push_back(x.shape[r - 1] == i(kk));
        out.shape.pop_back();
        out.shape[r - 2] = z.mulConst(x.shape[r - 2], kk);
        out.at = [zc, x, r, kk](const std::vector<Term>& idx) {
          std::vector<Term> j(idx.begin(), idx.begin() + long(r - 2));
          j.push_back(zc->divConst(idx[r - 2], kk));
          j.push_back(zc->modConst(idx[r - 2], kk));
          return x.at(j);
        };
      }
      return out;
    }
    case PatOp::Ir: return buildIr(p, xs);
    case PatOp::Var: break;
  }
  return makeError("internal", "unreachable");
}

Result<SymTensor> Builder::buildIr(const Pattern& p, std::vector<SymTensor>& xs) {
  using ir::OpKind;
  smt::Context* zc = &z;
  const ir::OpInfo& info = ir::opInfo(p.irOp);
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
      case OpKind::Cast: case OpKind::Not: return makeError("unsupported-op", std::string(info.name) + " has no smt meaning");
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
      return f(a.at(Broadcast::index(*zc, a.shape, bc.directA, idx)), b.at(Broadcast::index(*zc, b.shape, bc.directB, idx)));
    };
    return out;
  }
  if (p.irOp == OpKind::MatMul) return matmul(xs[0], xs[1]);
  if (p.irOp == OpKind::Dropout) {
    // Output 0 only: elementwise in (input, stream), same shapes (the IR's
    // typing), an uninterpreted function per ratio.
    if (xs[0].shape.size() != xs[1].shape.size()) wf->push_back(i(0) == i(1));  // ill typed: vacuous
    else sameShape(xs[0], xs[1]);
    const PatAttr* r = p.attr("ratio");
    if (r && r->kind == PatAttr::Kind::Var) return makeError("unsupported-attr", "dropout ratio must be a literal");
    double ratio = r ? (r->kind == PatAttr::Kind::Float ? r->f : double(r->i)) : 0.5;
    smt::Func g = z.func("op.dropout.ratio=" + std::to_string(ratio), {smt::Sort::Real, smt::Sort::Real}, smt::Sort::Real);
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
    auto ia = Broadcast::index(*zc, batchA, bc.directA, batch), ib = Broadcast::index(*zc, batchB, bc.directB, batch);
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
  if (!a || a->ints.empty()) for (size_t d = 0; d < r; ++d) axes.push_back(int64_t(d));
  else for (int64_t v : a->ints) { SP_ASSIGN(int64_t d, normDim(v, r)); axes.push_back(d); }
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
  out.at = [zc, x, red, keep, fop, mean, r](const std::vector<Term>& idx) {
    std::vector<Term> j(r);
    size_t q = 0;
    std::vector<std::pair<Term, size_t>> bound;
    for (size_t d = 0; d < r; ++d) {
      if (!red[d]) j[d] = idx[q++];
      else {
        if (keep) ++q;
        j[d] = zc->freshInt("r");
        bound.emplace_back(j[d], d);
      }
    }
    Term v = x.at(j);
    Term count = zc->intVal(1);
    for (size_t b = bound.size(); b-- > 0;) {
      v = zc->fold(fop, bound[b].first, zc->intVal(0), x.shape[bound[b].second], v);
      count = count * x.shape[bound[b].second];
    }
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
  SP_ASSIGN(int64_t axis, normDim(ax ? ax->i : -1, r));
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
  Term eps = z.realVal(epsv);
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

}  // namespace


namespace {

// Explicit ranks from `rank(?x) == k` conditions.
std::map<std::string, int> explicitRanks(const Lemma& l) {
  std::map<std::string, int> out;
  for (const auto& c : l.conds) {
    if (c.op != CmpOp::Eq) continue;
    if (c.lhs.kind == CondTerm::Kind::Rank && c.rhs.kind == CondTerm::Kind::Const) out[c.lhs.var] = int(c.rhs.value);
    if (c.rhs.kind == CondTerm::Kind::Rank && c.lhs.kind == CondTerm::Kind::Const) out[c.rhs.var] = int(c.lhs.value);
  }
  return out;
}

// Tensor variables and integer attribute variables (slice bounds) of a pattern.
void patternVars(const Pattern& p, std::set<std::string>& tensors, std::set<std::string>& ints) {
  if (p.op == PatOp::Var) { tensors.insert(p.name); return; }
  for (const auto& a : p.attrs)
    if (a.kind == PatAttr::Kind::Var && p.op != PatOp::Scale) ints.insert(a.text);
  for (const auto& a : p.args) patternVars(*a, tensors, ints);
}

void sizeVarsOf(const Pattern& p, std::set<std::string>& out) {
  if (p.op == PatOp::SplitLast || p.op == PatOp::MergeLast)
    if (const PatAttr* a = p.attr("size"); a && a->kind == PatAttr::Kind::Var) out.insert(a->text);
  for (const auto& a : p.args) sizeVarsOf(*a, out);
}

// [lo, hi] of an integer variable from conditions `?v op c` / `c op ?v`.
std::optional<std::pair<int64_t, int64_t>> boundsOf(const Lemma& l, const std::string& v) {
  std::optional<int64_t> lo, hi;
  auto tighten = [&](CmpOp op, int64_t c) {
    auto setLo = [&](int64_t x) { lo = lo ? std::max(*lo, x) : x; };
    auto setHi = [&](int64_t x) { hi = hi ? std::min(*hi, x) : x; };
    switch (op) {
      case CmpOp::Eq: setLo(c); setHi(c); break;
      case CmpOp::Le: setHi(c); break;
      case CmpOp::Lt: setHi(c - 1); break;
      case CmpOp::Ge: setLo(c); break;
      case CmpOp::Gt: setLo(c + 1); break;
      case CmpOp::Ne: break;
    }
  };
  auto flip = [](CmpOp op) {
    switch (op) {
      case CmpOp::Le: return CmpOp::Ge;
      case CmpOp::Lt: return CmpOp::Gt;
      case CmpOp::Ge: return CmpOp::Le;
      case CmpOp::Gt: return CmpOp::Lt;
      default: return op;
    }
  };
  for (const auto& c : l.conds) {
    if (c.lhs.kind == CondTerm::Kind::Var && c.lhs.var == v && c.rhs.kind == CondTerm::Kind::Const) tighten(c.op, c.rhs.value);
    if (c.rhs.kind == CondTerm::Kind::Var && c.rhs.var == v && c.lhs.kind == CondTerm::Kind::Const) tighten(flip(c.op), c.lhs.value);
  }
  if (!lo || !hi || *lo > *hi) return std::nullopt;
  return std::make_pair(*lo, *hi);
}

Result<Term> condTerm(Builder& b, const CondTerm& t) {
  smt::Context& z = b.z;
  switch (t.kind) {
    case CondTerm::Kind::Const: return z.intVal(t.value);
    case CondTerm::Kind::Var:
      if (auto it = b.fixedInts.find(t.var); it != b.fixedInts.end()) return z.intVal(it->second);
      return z.intVar(t.var);
    case CondTerm::Kind::Mod: {
      // The modulus must be a positive constant (a literal or a pinned size).
      std::optional<int64_t> m;
      if (t.args[1].kind == CondTerm::Kind::Const) m = t.args[1].value;
      else if (t.args[1].kind == CondTerm::Kind::Var && b.fixedInts.count(t.args[1].var)) m = b.fixedInts.at(t.args[1].var);
      if (!m || *m < 1) return makeError("unsupported-cond", "mod needs a positive constant modulus");
      SP_ASSIGN(Term x, condTerm(b, t.args[0]));
      return z.modConst(x, *m);
    }
    case CondTerm::Kind::Rank: {
      SP_ASSIGN(SymTensor v, b.var(t.var));
      return z.intVal(int64_t(v.shape.size()));
    }
    case CondTerm::Kind::Size: {
      SP_ASSIGN(SymTensor v, b.var(t.var));
      SP_ASSIGN(int64_t d, b.normDim(t.value, v.shape.size()));
      return v.shape[size_t(d)];
    }
    default: {
      SP_ASSIGN(Term x, condTerm(b, t.args[0]));
      SP_ASSIGN(Term y, condTerm(b, t.args[1]));
      return t.kind == CondTerm::Kind::Add ? x + y : t.kind == CondTerm::Kind::Sub ? x - y : x * y;
    }
  }
}

enum class Outcome { Proven, Unproven, NotApplicable };

// Concrete instances of the variables satisfying `facts` (conditions, left
// side well-typedness, sizes >= 1): each variable is pinned in turn (random
// order) to a random small value if that stays satisfiable; size 1 is drawn
// often so that broadcasting instances occur. Deterministic for a seed.
std::vector<LemmaInstance> solveInstances(Builder& b, const std::set<std::string>& intVars, std::vector<Term> facts,
                                          int count, std::mt19937_64& rng, unsigned timeoutMs) {
  smt::Context& z = b.z;
  struct Unknown { Term t; std::string tensor; size_t dim; std::string name; };
  std::vector<Unknown> unknowns;
  for (const auto& [name, t] : b.vars)
    for (size_t d = 0; d < t.shape.size(); ++d) {
      unknowns.push_back({t.shape[d], name, d, name + ".size" + std::to_string(d)});
      facts.push_back(z.le(t.shape[d], z.intVal(6)));
    }
  for (const auto& n : intVars) {
    Term t = z.intVar(n);
    unknowns.push_back({t, "", 0, n});
    facts.push_back(z.le(z.intVal(-12), t));
    facts.push_back(z.le(t, z.intVal(12)));
  }
  std::vector<LemmaInstance> out;
  for (int trial = 0; trial < count; ++trial) {
    std::vector<Term> pinned = facts;
    std::vector<size_t> order(unknowns.size());
    for (size_t k = 0; k < order.size(); ++k) order[k] = k;
    std::shuffle(order.begin(), order.end(), rng);
    std::map<size_t, int64_t> value;
    for (size_t k : order) {
      int64_t v = !unknowns[k].tensor.empty() ? (rng() % 3 == 0 ? 1 : int64_t(2 + rng() % 3)) : int64_t(rng() % 5);
      pinned.push_back(unknowns[k].t == z.intVal(v));
      if (z.satisfiable(pinned, {timeoutMs}).verdict == smt::Verdict::Refuted) { value[k] = v; continue; }
      pinned.pop_back();
    }
    smt::CheckResult m = z.satisfiable(pinned, {timeoutMs});
    if (m.verdict != smt::Verdict::Refuted) continue;
    LemmaInstance inst;
    for (const auto& [name, t] : b.vars) inst.dims[name].assign(t.shape.size(), 0);
    bool complete = true;
    for (size_t k = 0; k < unknowns.size(); ++k) {
      std::optional<int64_t> v = value.count(k) ? std::optional<int64_t>(value[k]) : m.model.intValue(unknowns[k].name);
      if (!v) { complete = false; break; }
      if (!unknowns[k].tensor.empty()) inst.dims[unknowns[k].tensor][unknowns[k].dim] = *v;
      else inst.ints[unknowns[k].name] = *v;
    }
    if (complete) out.push_back(std::move(inst));
  }
  return out;
}

// One rank assignment. `prove` false: only decide applicability and solve
// instances (after an earlier assignment failed).
Outcome proveInstance(const Lemma& l, const std::map<std::string, int>& ranks, const std::set<std::string>& intVars,
                      const std::map<std::string, int64_t>& pinned, bool prove, const ProveOptions& opts, std::mt19937_64& rng, std::string* reason,
                      std::vector<LemmaInstance>* instances) {
  smt::Context z;
  Builder b{z, 1, ranks, {}, nullptr, {}, opts.timeoutMs, std::nullopt};
  std::vector<Term> assumptions, lhsWf, rhsWf;
  b.fixedInts = pinned;
  for (const auto& [n, v] : pinned) assumptions.push_back(z.eq(z.intVar(n), z.intVal(v)));
  b.wf = &lhsWf;
  auto L = b.build(*l.lhs);
  if (!L.ok()) {
    if (L.error().id == "unsupported-op") { *reason = L.error().message; return Outcome::Unproven; }
    return Outcome::NotApplicable;
  }
  for (const auto& [name, t] : b.vars)
    for (const auto& s : t.shape) assumptions.push_back(z.ge(s, z.intVal(1)));
  for (const auto& c : l.conds) {
    auto x = condTerm(b, c.lhs);
    auto y = condTerm(b, c.rhs);
    if (!x.ok() || !y.ok()) return Outcome::NotApplicable;
    Term f = c.op == CmpOp::Eq ? z.eq(*x, *y) : c.op == CmpOp::Ne ? z.ne(*x, *y) : c.op == CmpOp::Lt ? z.lt(*x, *y)
           : c.op == CmpOp::Le ? z.le(*x, *y) : c.op == CmpOp::Gt ? z.gt(*x, *y) : z.ge(*x, *y);
    assumptions.push_back(f);
  }
  assumptions.insert(assumptions.end(), lhsWf.begin(), lhsWf.end());
  // Conditions that are structurally false for these ranks make the instance vacuous.
  if (z.satisfiable(assumptions, {opts.timeoutMs}).verdict == smt::Verdict::Proved) return Outcome::NotApplicable;
  // Rebuild the left side knowing its typing and the conditions (broadcast
  // pairs they prove equal lose the size-1 case), then the right side.
  b.facts = assumptions;
  std::vector<Term> lhsWf2;
  b.wf = &lhsWf2;
  L = b.build(*l.lhs);
  if (!L.ok()) { *reason = "left side: " + L.error().message; return Outcome::Unproven; }
  if (opts.evalOp) {
    auto solved = solveInstances(b, intVars, assumptions, opts.numericTrials, rng, opts.timeoutMs);
    instances->insert(instances->end(), solved.begin(), solved.end());
  }
  if (!prove) return Outcome::Unproven;
  b.wf = &rhsWf;
  auto R = b.build(*l.rhs);
  if (!R.ok()) { *reason = "right side: " + R.error().message; return Outcome::Unproven; }
  if (R->shape.size() != L->shape.size()) {
    *reason = "right side has rank " + std::to_string(R->shape.size()) + ", left side " + std::to_string(L->shape.size());
    return Outcome::Unproven;
  }
  std::vector<Term> idx, goals = rhsWf;
  for (size_t d = 0; d < L->shape.size(); ++d) {
    Term v = z.intVar("index" + std::to_string(d));
    assumptions.push_back(z.le(z.intVal(0), v));
    assumptions.push_back(z.lt(v, L->shape[d]));
    idx.push_back(v);
    goals.push_back(z.eq(L->shape[d], R->shape[d]));
  }
  goals.push_back(z.eq(L->at(idx), R->at(idx)));
  smt::CheckResult r = z.check(assumptions, z.and_(goals), {opts.timeoutMs});
  if (r.verdict == smt::Verdict::Proved) return Outcome::Proven;
  *reason = std::string(smt::verdictName(r.verdict)) + (r.reason.empty() ? "" : " (" + r.reason + ")") +
            (r.model.values.empty() ? "" : ": counterexample " + r.model.str());
  return Outcome::Unproven;
}

std::string rankText(const std::map<std::string, int>& ranks, const std::map<std::string, int>& fixed) {
  std::string s;
  for (const auto& [n, r] : ranks)
    if (!fixed.count(n)) s += (s.empty() ? "" : ", ") + ("rank(?" + n + ") = " + std::to_string(r));
  return s;
}

}  // namespace

std::vector<LemmaStatus> proveLemmas(const LemmaLibrary& lib, const ProveOptions& opts) {
  std::vector<LemmaStatus> out;
  for (const auto& l : lib.lemmas) {
    if (!opts.only.empty() && std::find(opts.only.begin(), opts.only.end(), l.name) == opts.only.end()) continue;
    auto t0 = std::chrono::steady_clock::now();
    LemmaStatus st;
    st.name = l.name;
    std::set<std::string> tensors, intVars;
    patternVars(*l.lhs, tensors, intVars);
    std::map<std::string, int> fixed = explicitRanks(l);
    // Every default-rank variable takes every rank 1..maxRank independently
    // (binary ops broadcast across ranks).
    std::vector<std::string> free;
    std::map<std::string, int> ranks;
    for (const auto& n : tensors) {
      if (fixed.count(n)) ranks[n] = fixed[n];
      else { free.push_back(n); ranks[n] = 1; }
    }
    bool general = !free.empty();
    std::mt19937_64 rng(opts.seed);
    std::vector<LemmaInstance> instances;
    std::set<int> provenRanks;
    bool failed = false, anyProven = false;
    // Split sizes given by a variable: the conditions bound it to a finite
    // range and each value is proven (linear index arithmetic per value).
    std::set<std::string> sizeVars;
    sizeVarsOf(*l.lhs, sizeVars);
    sizeVarsOf(*l.rhs, sizeVars);
    std::vector<std::map<std::string, int64_t>> pins{{}};
    for (const auto& n : sizeVars) {
      auto range = boundsOf(l, n);
      if (!range || range->first < 1 || range->second - range->first > 16) {
        failed = true;
        st.reason = "size variable ?" + n + " needs conditions bounding it to a range within 1..(lo+16)";
        break;
      }
      std::vector<std::map<std::string, int64_t>> next;
      for (const auto& pm : pins)
        for (int64_t v = range->first; v <= range->second; ++v) { auto q = pm; q[n] = v; next.push_back(q); }
      pins = std::move(next);
    }
    for (const auto& pin : pins) {
    if (failed) break;
    for (auto& [n, r] : ranks) r = fixed.count(n) ? fixed[n] : 1;
    while (true) {
      std::string why;
      std::string pinText;
      for (const auto& [n, v] : pin) pinText += (pinText.empty() ? "" : ", ") + ("?" + n + " = " + std::to_string(v));
      switch (proveInstance(l, ranks, intVars, pin, !failed, opts, rng, &why, &instances)) {
        case Outcome::Proven:
          anyProven = true;
          for (const auto& n : free) provenRanks.insert(ranks[n]);
          break;
        case Outcome::NotApplicable: break;
        case Outcome::Unproven:
          if (!failed) st.reason = (pinText.empty() ? "" : pinText + ": ") + (general ? rankText(ranks, fixed) + ": " : "") + why;
          failed = true;
      }
      size_t k = 0;  // next assignment (odometer)
      while (k < free.size() && ranks[free[k]] == opts.maxRank) ranks[free[k++]] = 1;
      if (k == free.size()) break;
      ++ranks[free[k]];
    }
    }
    st.proven = !failed && anyProven;
    if (!failed && !anyProven) st.reason = "no applicable instance up to rank " + std::to_string(opts.maxRank);
    if (general && st.proven) st.ranks.assign(provenRanks.begin(), provenRanks.end());
    checkLemmaNumerically(l, instances, opts, st);
    st.millis = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    out.push_back(std::move(st));
  }
  return out;
}

}  // namespace sp::rewrite

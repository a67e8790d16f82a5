// Proofs of lemmas with Z3 (through rewrite/smt). A tensor is a symbolic
// shape (Int terms) and a value function from index terms to a Real term.
// Variables are uninterpreted functions; layout ops are index arithmetic;
// add/sub/mul/neg/scale/div/max/min/relu/abs are exact real arithmetic; other
// elementwise ops are uninterpreted functions; reductions, matmul and norms
// use smt folds. The goal: under the side conditions and the left side being
// well formed, the right side is well formed, has the same shape, and equals
// the left side at every index in bounds.
#include <chrono>
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

struct Builder {
  smt::Context& z;
  int defaultRank;
  std::map<std::string, int> ranks;             // explicit rank(?x) == k
  std::map<std::string, SymTensor> vars;
  std::vector<Term>* wf = nullptr;              // well-formedness facts of the side being built
  std::optional<std::string> error;             // structural: not applicable / unsupported

  Term i(int64_t v) { return z.intVal(v); }

  Result<int64_t> normDim(int64_t d, size_t rank) {
    if (d < -int64_t(rank) || d >= int64_t(rank))
      return makeError("dim-out-of-range", "dim " + std::to_string(d) + " out of range for rank " + std::to_string(rank));
    return d < 0 ? d + int64_t(rank) : d;
  }

  Term attrInt(const Pattern& p, const std::string& n) {
    const PatAttr* a = p.attr(n);
    if (a->kind == PatAttr::Kind::Var) return z.intVar(a->text);
    return i(a->i);
  }

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

  Term uf1(const std::string& name, Term x) {
    return z.apply(z.func("op." + name, {smt::Sort::Real}, smt::Sort::Real), {x});
  }

  Result<SymTensor> build(const Pattern& p);
  Result<SymTensor> buildIr(const Pattern& p, std::vector<SymTensor>& xs);
  Result<SymTensor> reduce(const Pattern& p, const SymTensor& x);
  Result<SymTensor> norm(const Pattern& p, std::vector<SymTensor>& xs);
};

Result<SymTensor> Builder::build(const Pattern& p) {
  if (p.op == PatOp::Var) return var(p.name);
  std::vector<SymTensor> xs;
  for (const auto& a : p.args) {
    SP_ASSIGN(SymTensor t, build(*a));
    xs.push_back(std::move(t));
  }
  bool sameRank = p.op == PatOp::Concat || p.op == PatOp::Sum ||
                  (p.op == PatOp::Ir && ir::opInfo(p.irOp).category == ir::OpCategory::Binary);
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
      Term s = attrInt(p, "start"), e = attrInt(p, "end");
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
    sameShape(xs[0], xs[1]);
    SymTensor out = xs[0], a = xs[0], b = xs[1];
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
    out.at = [a, b, f](const std::vector<Term>& idx) { return f(a.at(idx), b.at(idx)); };
    return out;
  }
  if (p.irOp == OpKind::MatMul) {
    size_t r = xs[0].shape.size();
    if (r < 2) return makeError("rank-too-small", "matmul needs rank >= 2, got " + std::to_string(r));
    SymTensor a = xs[0], b = xs[1], out = xs[0];
    for (size_t d = 0; d + 2 < r; ++d) wf->push_back(a.shape[d] == b.shape[d]);
    wf->push_back(a.shape[r - 1] == b.shape[r - 2]);
    out.shape[r - 1] = b.shape[r - 1];
    Term k = a.shape[r - 1];
    out.at = [zc, a, b, k, r](const std::vector<Term>& idx) {
      Term t = zc->freshInt("k");
      auto ia = idx, ib = idx;
      ia[r - 1] = t;
      ib[r - 2] = t;
      return zc->fold(smt::FoldOp::Sum, t, zc->intVal(0), k, a.at(ia) * b.at(ib));
    };
    return out;
  }
  if (info.category == ir::OpCategory::Reduce) return reduce(p, xs[0]);
  if (info.category == ir::OpCategory::Norm) return norm(p, xs);
  if (p.irOp == OpKind::Transpose) {
    const auto& perm = p.attr("perm")->ints;
    SymTensor out, x = xs[0];
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
  axes.erase(std::unique(axes.begin(), axes.end()), axes.end());
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
  for (size_t k = 1; k < xs.size(); ++k) {
    if (xs[k].shape.size() != 1) return makeError("rank-mismatch", p.name + ": weights must have rank 1");
    wf->push_back(xs[k].shape[0] == x.shape[r - 1]);
  }
  const PatAttr* ep = p.attr("epsilon");
  double epsv = ep ? ep->f : (p.irOp == OpKind::LayerNorm ? 1e-5 : 1e-6);
  Term eps = z.realVal(epsv);
  bool layer = p.irOp == OpKind::LayerNorm;
  std::vector<SymTensor> w(xs.begin() + 1, xs.end());
  SymTensor out = x;
  out.at = [this, zc, x, r, eps, layer, w](const std::vector<Term>& idx) {
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
    if (!w.empty()) v = v * w[0].at({idx[r - 1]});
    if (w.size() > 1) v = v + w[1].at({idx[r - 1]});
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

bool mentionsDefaultRank(const Pattern& p, const std::map<std::string, int>& ranks) {
  if (p.op == PatOp::Var) return !ranks.count(p.name);
  for (const auto& a : p.args)
    if (mentionsDefaultRank(*a, ranks)) return true;
  return false;
}

Result<Term> condTerm(Builder& b, const CondTerm& t) {
  smt::Context& z = b.z;
  switch (t.kind) {
    case CondTerm::Kind::Const: return z.intVal(t.value);
    case CondTerm::Kind::Var: return z.intVar(t.var);
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

Outcome proveInstance(const Lemma& l, int rank, const ProveOptions& opts, std::string* reason) {
  smt::Context z;
  Builder b{z, rank, explicitRanks(l), {}, nullptr, std::nullopt};
  std::vector<Term> assumptions, lhsWf, rhsWf;
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
  // Conditions that are structurally false for this rank make the instance vacuous.
  if (z.satisfiable(assumptions, {opts.timeoutMs}).verdict == smt::Verdict::Proved) return Outcome::NotApplicable;
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

}  // namespace

// Numeric check, defined in lemma_numeric.cpp.
void checkLemmaNumerically(const Lemma& l, const std::vector<int>& ranks, const ProveOptions& opts, LemmaStatus& st);

std::vector<LemmaStatus> proveLemmas(const LemmaLibrary& lib, const ProveOptions& opts) {
  std::vector<LemmaStatus> out;
  for (const auto& l : lib.lemmas) {
    if (!opts.only.empty() && std::find(opts.only.begin(), opts.only.end(), l.name) == opts.only.end()) continue;
    auto t0 = std::chrono::steady_clock::now();
    LemmaStatus st;
    st.name = l.name;
    bool general = mentionsDefaultRank(*l.lhs, explicitRanks(l));
    int maxR = general ? opts.maxRank : 1;
    bool failed = false;
    for (int r = 1; r <= maxR && !failed; ++r) {
      std::string why;
      switch (proveInstance(l, r, opts, &why)) {
        case Outcome::Proven: st.ranks.push_back(r); break;
        case Outcome::NotApplicable: break;
        case Outcome::Unproven:
          failed = true;
          st.reason = (general ? "rank " + std::to_string(r) + ": " : "") + why;
      }
    }
    st.proven = !failed && !st.ranks.empty();
    if (!failed && st.ranks.empty()) st.reason = "no applicable instance up to rank " + std::to_string(opts.maxRank);
    if (!general && st.proven) st.ranks.clear();
    checkLemmaNumerically(l, general ? st.ranks : std::vector<int>{1}, opts, st);
    st.millis = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    out.push_back(std::move(st));
  }
  return out;
}

}  // namespace sp::rewrite

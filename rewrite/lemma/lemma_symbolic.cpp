// Symbolic tensors of lemma patterns: variables are uninterpreted functions;
// the relation operators (concat, sum, slice, scale, permute, split/merge)
// are index arithmetic; IR ops are in lemma_symbolic_ir.cpp. Binary IR ops
// broadcast as in the IR (numpy); sum and concat need equal shapes (off the
// concat dim).
#include <algorithm>

#include "rewrite/lemma/lemma_symbolic.h"

namespace sp::rewrite::symbolic {

Result<Term> Builder::attrInt(const Pattern& p, const std::string& n) {
  const PatAttr* a = p.attr(n);
  if (a->kind == PatAttr::Kind::Var) {
    if (auto it = fixedInts.find(a->text); it != fixedInts.end()) return i(it->second);
    return z.intVar(a->text);
  }
  if (a->kind == PatAttr::Kind::Expr) return condTerm(*this, *a->expr);
  return i(a->i);
}

// A computed dim (a right side concat's dim=?d - 1): a term of pinned dim
// variables, ranks and literals, concrete in every proof.
static Result<int64_t> dimTermValue(Builder& b, const CondTerm& t) {
  switch (t.kind) {
    case CondTerm::Kind::Const: return t.value;
    case CondTerm::Kind::Var:
      if (auto it = b.fixedInts.find(t.var); it != b.fixedInts.end()) return it->second;
      return makeError("unsupported-op", "dim term ?" + t.var + " is not pinned");
    case CondTerm::Kind::Rank: {
      SP_ASSIGN(SymTensor v, b.var(t.var));
      return int64_t(v.shape.size());
    }
    case CondTerm::Kind::Add: case CondTerm::Kind::Sub: case CondTerm::Kind::Mul: {
      SP_ASSIGN(int64_t x, dimTermValue(b, t.args[0]));
      SP_ASSIGN(int64_t y, dimTermValue(b, t.args[1]));
      return t.kind == CondTerm::Kind::Add ? x + y : t.kind == CondTerm::Kind::Sub ? x - y : x * y;
    }
    default: return makeError("unsupported-op", "a dim term is made of dim variables, ranks, literals, + - *");
  }
}

Result<int64_t> Builder::dimAttr(const Pattern& p, size_t rank) {
  const PatAttr* a = p.attr("dim");
  if (a->kind == PatAttr::Kind::Expr) {
    SP_ASSIGN(int64_t d, dimTermValue(*this, *a->expr));
    if (d < 0 || d >= int64_t(rank))
      return makeError("dim-out-of-range", "dim " + a->expr->str() + " = " + std::to_string(d) + " out of range for rank " + std::to_string(rank));
    return d;
  }
  if (a->kind != PatAttr::Kind::Var) return normDim(a->i, rank);
  return pinnedDim(a->text, rank);
}

// A dim variable (concat's dim=?d, a reduction's axes=[?e]): proven for each
// dim in turn (lemma_prove.cpp pins it), counted from 0 like the dims the
// engine binds.
Result<int64_t> Builder::pinnedDim(const std::string& var, size_t rank) {
  auto it = fixedInts.find(var);
  if (it == fixedInts.end()) return makeError("unsupported-op", "dim ?" + var + " is not pinned");
  if (it->second < 0 || it->second >= int64_t(rank))
    return makeError("dim-out-of-range", "dim " + std::to_string(it->second) + " out of range for rank " + std::to_string(rank));
  return it->second;
}

Result<SymTensor> Builder::build(const Pattern& p) {
  if (p.op == PatOp::Var) return var(p.name);
  std::vector<SymTensor> xs;
  for (const auto& a : p.args) {
    SP_ASSIGN(SymTensor t, build(*a));
    xs.push_back(std::move(t));
  }
  // Sums and scales are arithmetic; a concat of bool and real parts is real.
  bool mixed = false;
  for (const auto& x : xs) mixed = mixed || x.isBool != xs[0].isBool || x.isInt != xs[0].isInt;
  if (p.op == PatOp::Sum || p.op == PatOp::Scale || (p.op == PatOp::Concat && mixed))
    for (auto& x : xs) x = asReal(x);
  bool sameRank = p.op == PatOp::Concat || p.op == PatOp::Sum;
  for (size_t k = 1; sameRank && k < xs.size(); ++k)
    if (xs[k].shape.size() != xs[0].shape.size())
      return makeError("rank-mismatch", p.name + ": operands have ranks " + std::to_string(xs[0].shape.size()) +
                                            " and " + std::to_string(xs[k].shape.size()));
  smt::Context* zc = &z;
  switch (p.op) {
    case PatOp::Concat: {
      SP_ASSIGN(int64_t d, dimAttr(p, xs[0].shape.size()));
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
      SP_ASSIGN(int64_t d, dimAttr(p, xs[0].shape.size()));
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
      if (a->kind == PatAttr::Kind::Recip) {  // factor 1/n: x / n, n must be positive (a goal on the right side)
        SP_ASSIGN(Term n, condTerm(*this, *a->expr));
        wf->push_back(z.gt(n, i(0)));
        Term nr = z.toReal(n);
        out.at = [zc, x, nr](const std::vector<Term>& idx) { return zc->realDiv(x.at(idx), nr); };
        return out;
      }
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
      Size k = sizeAttr(p);
      if (k.c && *k.c < 1) return makeError("bad-size", p.name + ": size must be >= 1");
      SymTensor x = xs[0], out = xs[0];
      size_t r = x.shape.size();
      if (p.op == PatOp::SplitLast) {
        if (r < 1) return makeError("rank-too-small", "split_last needs rank >= 1");
        wf->push_back(k.mod(z, x.shape[r - 1]) == i(0));
        out.shape[r - 1] = k.div(z, x.shape[r - 1]);
        out.shape.push_back(k.t);
        out.at = [zc, x, r, k](const std::vector<Term>& idx) {
          std::vector<Term> j(idx.begin(), idx.begin() + long(r - 1));
          j.push_back(k.mul(*zc, idx[r - 1]) + idx[r]);
          return x.at(j);
        };
      } else {
        if (r < 2) return makeError("rank-too-small", "merge_last needs rank >= 2");
        wf->push_back(x.shape[r - 1] == k.t);
        out.shape.pop_back();
        out.shape[r - 2] = k.mul(z, x.shape[r - 2]);
        out.at = [zc, x, r, k](const std::vector<Term>& idx) {
          std::vector<Term> j(idx.begin(), idx.begin() + long(r - 2));
          j.push_back(k.div(*zc, idx[r - 2]));
          j.push_back(k.mod(*zc, idx[r - 2]));
          return x.at(j);
        };
      }
      return out;
    }
    case PatOp::Const: return constant(p);
    case PatOp::MergeDims: {  // dims d, d+1 (size k) into one: index j -> (j div k, j mod k)
      Size k = sizeAttr(p);
      if (k.c && *k.c < 1) return makeError("bad-size", p.name + ": size must be >= 1");
      SymTensor x = xs[0], out = xs[0];
      SP_ASSIGN(int64_t d, normDim(p.attr("dim")->i, x.shape.size()));
      size_t dd = size_t(d);
      if (dd + 1 >= x.shape.size()) return makeError("rank-too-small", "merge_dims: no dim after " + std::to_string(d));
      wf->push_back(x.shape[dd + 1] == k.t);
      out.shape.erase(out.shape.begin() + long(dd) + 1);
      out.shape[dd] = k.mul(z, x.shape[dd]);
      out.at = [zc, x, dd, k](const std::vector<Term>& idx) {
        std::vector<Term> j(idx.begin(), idx.begin() + long(dd));
        j.push_back(k.div(*zc, idx[dd]));
        j.push_back(k.mod(*zc, idx[dd]));
        j.insert(j.end(), idx.begin() + long(dd) + 1, idx.end());
        return x.at(j);
      };
      return out;
    }
    case PatOp::SplitDims: {  // dim d into (d div k, k): index (a, j) -> a*k + j
      Size k = sizeAttr(p);
      if (k.c && *k.c < 1) return makeError("bad-size", p.name + ": size must be >= 1");
      SymTensor x = xs[0], out = xs[0];
      SP_ASSIGN(int64_t d, normDim(p.attr("dim")->i, x.shape.size()));
      size_t dd = size_t(d);
      wf->push_back(k.mod(z, x.shape[dd]) == i(0));
      out.shape[dd] = k.div(z, x.shape[dd]);
      out.shape.insert(out.shape.begin() + long(dd) + 1, k.t);
      out.at = [zc, x, dd, k](const std::vector<Term>& idx) {
        std::vector<Term> j(idx.begin(), idx.begin() + long(dd));
        j.push_back(k.mul(*zc, idx[dd]) + idx[dd + 1]);
        j.insert(j.end(), idx.begin() + long(dd) + 2, idx.end());
        return x.at(j);
      };
      return out;
    }
    case PatOp::Ir: return buildIr(p, xs);
    case PatOp::OpVar: return opVar(p, xs);
    case PatOp::Var: break;
  }
  return makeError("internal", "unreachable");
}

bool mentions(smt::Context& z, const Term& t, const Term& var) {
  std::string s = z.str(t), v = z.str(var);
  auto sep = [](char c) { return c == ' ' || c == '(' || c == ')' || c == '\n' || c == '\t' || c == '|'; };
  for (size_t p = s.find(v); p != std::string::npos; p = s.find(v, p + 1))
    if ((p == 0 || sep(s[p - 1])) && (p + v.size() == s.size() || sep(s[p + v.size()]))) return true;
  return false;
}

void foldReads(smt::Context& z, std::vector<Term>* sink, size_t from, const std::vector<std::pair<Term, Term>>& binders) {
  if (!sink) return;
  for (size_t k = from; k < sink->size(); ++k) {
    Term orig = (*sink)[k], c = orig;
    for (const auto& [var, n] : binders) {  // innermost first; mentions decided on the read itself
      if (!mentions(z, orig, var)) continue;
      Term all = z.fold(smt::FoldOp::Min, var, z.intVal(0), n,
                        z.ite(c, z.realVal(int64_t(1), 1), z.realVal(int64_t(0), 1)));
      c = z.ge(all, z.realVal(int64_t(1), 1));
    }
    (*sink)[k] = c;
  }
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
      SP_ASSIGN(Term x, condTerm(b, t.args[0]));
      if (m && *m >= 1) return z.modConst(x, *m);
      // A size variable left symbolic (an Int unknown >= 1, lemma_prove.cpp):
      // Z3's integer mod, nonlinear; only an unsat answer proves.
      if (t.args[1].kind == CondTerm::Kind::Var) return z.modInt(x, z.intVar(t.args[1].var));
      return makeError("unsupported-cond", "mod needs a positive constant modulus or a size variable");
    }
    case CondTerm::Kind::Rank: {
      SP_ASSIGN(SymTensor v, b.var(t.var));
      return z.intVal(int64_t(v.shape.size()));
    }
    case CondTerm::Kind::Shape: return makeError("unsupported-cond", "shape() is compared by the prover, not evaluated");
    case CondTerm::Kind::Size: {
      SP_ASSIGN(SymTensor v, b.var(t.var));
      int64_t dim = t.value;
      if (!t.args.empty()) {  // a computed dim, concrete per instance: out of range, no such size
        SP_ASSIGN(int64_t d, dimTermValue(b, t.args[0]));
        if (d < 0 || d >= int64_t(v.shape.size()))
          return makeError("dim-out-of-range", "size dim " + t.args[0].str() + " = " + std::to_string(d) + " out of range");
        return v.shape[size_t(d)];
      }
      if (!t.dimVar.empty()) {  // a dim variable, pinned for this proof (lemma_prove.cpp)
        auto it = b.fixedInts.find(t.dimVar);
        if (it == b.fixedInts.end()) return makeError("unsupported-cond", "dim ?" + t.dimVar + " is not pinned");
        dim = it->second;
      }
      SP_ASSIGN(int64_t d, b.normDim(dim, v.shape.size()));
      return v.shape[size_t(d)];
    }
    default: {
      SP_ASSIGN(Term x, condTerm(b, t.args[0]));
      SP_ASSIGN(Term y, condTerm(b, t.args[1]));
      return t.kind == CondTerm::Kind::Add ? x + y : t.kind == CondTerm::Kind::Sub ? x - y : x * y;
    }
  }
}

}  // namespace sp::rewrite::symbolic

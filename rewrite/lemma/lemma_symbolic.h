#pragma once
// Symbolic tensors for lemma proofs (internal to rewrite/lemma_*.cpp): a
// tensor is a symbolic shape (Int terms) and a value function from index
// terms to a term; Builder turns a lemma pattern into one. The encoding of
// every op is described in docs/lemmas.md ("The encoding").
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "rewrite/lemma/lemma.h"
#include "rewrite/smt/smt.h"

namespace sp::rewrite::symbolic {

using smt::Term;

// Element values are Real terms; Int terms when isInt (variables the
// patterns use as indices, lemmaVarDTypes; constants; integer arithmetic on
// those); Bool terms when isBool (comparisons, and/or/not, bool variables).
struct SymTensor {
  std::vector<Term> shape;
  std::function<Term(const std::vector<Term>&)> at;
  bool isBool = false;
  bool isInt = false;
};

// Numpy broadcasting of two shapes: well-typedness facts, output shape and,
// per operand dim, whether it may broadcast (read index 0 when its size is 1)
// or is known to equal the output dim (read the output index).
struct Broadcast {
  std::vector<Term> shape;
  std::vector<Term> wf;
  std::vector<bool> directA, directB;
  // Per operand dim: known to be 1 (a literal, or proven so by the facts):
  // read at 0.
  std::vector<bool> oneA, oneB;
  // Index into an operand of shape `xs` for an output index (aligned right).
  static std::vector<Term> index(smt::Context& z, const std::vector<Term>& xs, const std::vector<bool>& direct,
                                 const std::vector<Term>& idx, const std::vector<bool>& one = {}) {
    std::vector<Term> j;
    size_t off = idx.size() - xs.size();
    for (size_t k = 0; k < xs.size(); ++k)
      j.push_back(direct[k]                                       ? idx[k + off]
                  : isOne(z, xs[k]) || (k < one.size() && one[k]) ? z.intVal(0)
                                                                  : z.ite(xs[k] == z.intVal(1), z.intVal(0), idx[k + off]));
    return j;
  }
  // The literal 1 (a size that broadcasts for certain).
  static bool isOne(smt::Context& z, const Term& t) { return z.str(t) == "1"; }
};

// Whether `t` mentions the variable `var` (a fold's bound variable) outside
// fold placeholders: a whole-token search of the printed term.
bool mentions(smt::Context& z, const Term& t, const Term& var);

// Gather reads under a fold (docs/lemmas.md). The reads recorded in `sink`
// from position `from` on that mention a bound variable `var` of a fold
// over [0, n) become "the read is defined on the whole range":
// fold_min_{var in [0, n)} ite(read, 1, 0) >= 1 (sizes are >= 1). `binders`
// are (var, n), innermost first. Reads mentioning none stay as they are.
void foldReads(smt::Context& z, std::vector<Term>* sink, size_t from, const std::vector<std::pair<Term, Term>>& binders);

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
  // Definedness of gathers: every read of a gather/gather_elements at an
  // index pushes "the index is an integer in bounds" here (the sink of the
  // side being built, captured by its closures when .at() runs).
  std::vector<Term>* reads = nullptr;
  std::map<std::string, ir::DType> varTypes;   // i64/bool variables (lemmaVarDTypes); others real

  // A split/merge size: a literal, a variable pinned for this proof (linear
  // index arithmetic by a constant), or a variable the conditions do not
  // bound to a short range: an Int unknown (lemma_prove.cpp assumes it
  // >= 1), with nonlinear index arithmetic left to Z3.
  struct Size {
    std::optional<int64_t> c;
    Term t;
    Term mul(smt::Context& z, Term x) const { return c ? z.mulConst(x, *c) : x * t; }
    Term div(smt::Context& z, Term x) const { return c ? z.divConst(x, *c) : z.divInt(x, t); }
    Term mod(smt::Context& z, Term x) const { return c ? z.modConst(x, *c) : z.modInt(x, t); }
  };
  Size sizeAttr(const Pattern& p) {
    const PatAttr* a = p.attr("size");
    if (a->kind != PatAttr::Kind::Var) return {a->i, z.intVal(a->i)};
    if (auto it = fixedInts.find(a->text); it != fixedInts.end()) return {it->second, z.intVal(it->second)};
    return {std::nullopt, z.intVar(a->text)};
  }

  Term i(int64_t v) { return z.intVal(v); }

  Result<int64_t> normDim(int64_t d, size_t rank) {
    if (d < -int64_t(rank) || d >= int64_t(rank))
      return makeError("dim-out-of-range", "dim " + std::to_string(d) + " out of range for rank " + std::to_string(rank));
    return d < 0 ? d + int64_t(rank) : d;
  }

  Result<Term> attrInt(const Pattern& p, const std::string& n);
  // The dim of a concat or slice: a literal, or a dim variable pinned for
  // this proof (fixedInts).
  Result<int64_t> dimAttr(const Pattern& p, size_t rank);
  Result<int64_t> pinnedDim(const std::string& var, size_t rank);

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
    auto ty = varTypes.find(name);
    t.isInt = ty != varTypes.end() && ty->second == ir::DType::I64;
    t.isBool = ty != varTypes.end() && ty->second == ir::DType::Bool;
    smt::Func f = z.func("tensor." + name, dom, t.isInt ? smt::Sort::Int : t.isBool ? smt::Sort::Bool : smt::Sort::Real);
    smt::Context* zc = &z;
    t.at = [zc, f](const std::vector<Term>& idx) { return zc->apply(f, idx); };
    vars[name] = t;
    return t;
  }

  bool provablyEqual(Term x, Term y) {
    if (x.id() == y.id()) return true;
    return !facts.empty() && z.check(facts, x == y, {timeoutMs}).verdict == smt::Verdict::Proved;
  }

  // A literal 1, or a size the facts (conditions, left side typing) prove 1:
  // it broadcasts to the other operand's size, so that operand is read at
  // the output index (no size-1 case), which keeps fold bodies equal
  // (mul(reduce_sum(p), f) against reduce_sum(mul(p, f)) with size(f, -1)
  // == 1 a condition).
  bool provablyOne(Term t) {
    if (Broadcast::isOne(z, t)) return true;
    return !facts.empty() && z.check(facts, t == z.intVal(1), {timeoutMs}).verdict == smt::Verdict::Proved;
  }

  Broadcast broadcast(const std::vector<Term>& a, const std::vector<Term>& b) {
    Broadcast out;
    size_t r = std::max(a.size(), b.size());
    out.directA.assign(a.size(), true);
    out.directB.assign(b.size(), true);
    out.oneA.assign(a.size(), false);
    out.oneB.assign(b.size(), false);
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
      // A literal 1 broadcasts to the other size, whatever it is.
      if (provablyOne(y)) { out.shape.push_back(x); out.directB[kb] = false; out.oneB[kb] = true; continue; }
      if (provablyOne(x)) { out.shape.push_back(y); out.directA[ka] = false; out.oneA[ka] = true; continue; }
      out.wf.push_back(z.or_({x == y, x == one, y == one}));
      out.shape.push_back(z.ite(x == one, y, x));
      out.directA[ka] = out.directB[kb] = false;
    }
    return out;
  }

  // A unary op as an uninterpreted function; exp with the laws of the real
  // exponential (smt::Context::exp).
  Term uf1(const std::string& name, Term x) {
    smt::Func f = z.func("op." + name, {smt::Sort::Real}, smt::Sort::Real);
    return name == "exp" ? z.exp(f, x) : z.apply(f, {x});
  }

  Result<SymTensor> build(const Pattern& p);
  Result<SymTensor> buildIr(const Pattern& p, std::vector<SymTensor>& xs);
  // An op variable: one uninterpreted function per variable ("opvar.?f"),
  // of the element (unary) or of the broadcast element pair (binary).
  Result<SymTensor> opVar(const Pattern& p, std::vector<SymTensor>& xs);
  Result<SymTensor> unitDims(const Pattern& p, const SymTensor& x);  // unsqueeze, squeeze
  Result<SymTensor> reduce(const Pattern& p, const SymTensor& x);
  Result<SymTensor> matmul(SymTensor a, SymTensor b);
  Result<SymTensor> norm(const Pattern& p, std::vector<SymTensor>& xs);
  // lemma_symbolic_index.cpp: const, comparisons, and/or/not, where, cast,
  // gather, gather_elements, squeeze/unsqueeze. nullopt: not one of those.
  std::optional<Result<SymTensor>> buildIndexOp(const Pattern& p, std::vector<SymTensor>& xs);
  Result<SymTensor> constant(const Pattern& p);
  SymTensor asReal(const SymTensor& t);
  SymTensor asBool(const SymTensor& t);
};

Result<Term> condTerm(Builder& b, const CondTerm& t);

}  // namespace sp::rewrite::symbolic

// Lemma proofs with Z3: for each rank assignment (and pinned size value)
// the two sides are built as symbolic tensors (rewrite/lemma/lemma_symbolic.h) and
// the goal is checked: under the side conditions and the left side being
// well typed as IR, the right side is well typed, has the same shape, and
// equals the left side at every index in bounds. Also solves concrete
// instances for the numeric check.
#include <algorithm>
#include <chrono>
#include <random>
#include <set>
#include <sstream>

#include "rewrite/lemma/lemma.h"
#include "rewrite/lemma/lemma_symbolic.h"

namespace sp::rewrite {

namespace {

using smt::Term;
using symbolic::Builder;
using symbolic::condTerm;

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

// Tensor variables and integer attribute variables (slice bounds, constant
// values) of a pattern; not the real ones (scale factors, IR float
// attributes such as dropout's ratio).
void patternVars(const Pattern& p, std::set<std::string>& tensors, std::set<std::string>& ints) {
  if (p.op == PatOp::Var) { tensors.insert(p.name); return; }
  for (const auto& a : p.attrs)
    if (a.kind == PatAttr::Kind::Var && p.op != PatOp::Scale && (p.op != PatOp::Ir || isDimVarAttr(p, a))) ints.insert(a.text);
  for (const auto& a : p.args) patternVars(*a, tensors, ints);
}

void sizeVarsOf(const Pattern& p, std::set<std::string>& out) {
  if (p.op == PatOp::SplitLast || p.op == PatOp::MergeLast || p.op == PatOp::MergeDims || p.op == PatOp::SplitDims)
    if (const PatAttr* a = p.attr("size"); a && a->kind == PatAttr::Kind::Var) out.insert(a->text);
  for (const auto& a : p.args) sizeVarsOf(*a, out);
}

// Dim variables: the `dim` of a concat or slice written as a variable.
void dimVarsOf(const Pattern& p, std::set<std::string>& out) {
  // concat/slice dim=?d, a reduction's axes=[?e], a normalization's axis=?e
  for (const auto& a : p.attrs)
    if (isDimVarAttr(p, a)) out.insert(a.text);
  for (const auto& a : p.args) dimVarsOf(*a, out);
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
enum class Outcome { Proven, Unproven, NotApplicable };

// Concrete instances of the variables satisfying `facts` (conditions, left
// side well-typedness, sizes >= 1): each variable is pinned in turn (random
// order) to a random small value if that stays satisfiable; size 1 is drawn
// often so that broadcasting instances occur. Deterministic for a seed.
// Caps of solved sizes and integers: small (6 and 12), and only when no
// instance fits, large enough for what the conditions force (a head size in
// 81..96, attn_views.rules).
constexpr int64_t kMaxSolvedSize = 192;

std::vector<LemmaInstance> solveInstances(Builder& b, const std::set<std::string>& intVars, std::vector<Term> facts,
                                          int count, std::mt19937_64& rng, unsigned timeoutMs,
                                          int64_t sizeCap = 6, int64_t intCap = 12) {
  smt::Context& z = b.z;
  struct Unknown { Term t; std::string tensor; size_t dim; std::string name; };
  std::vector<Unknown> unknowns;
  for (const auto& [name, t] : b.vars)
    for (size_t d = 0; d < t.shape.size(); ++d) {
      unknowns.push_back({t.shape[d], name, d, name + ".size" + std::to_string(d)});
      facts.push_back(z.le(t.shape[d], z.intVal(sizeCap)));
    }
  for (const auto& n : intVars) {
    Term t = z.intVar(n);
    unknowns.push_back({t, "", 0, n});
    facts.push_back(z.le(z.intVal(-12), t));
    facts.push_back(z.le(t, z.intVal(intCap)));
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
                      const std::map<std::string, int64_t>& pinned, const std::set<std::string>& symbolicSizes, bool prove,
                      const ProveOptions& opts, std::mt19937_64& rng, std::string* reason,
                      std::vector<LemmaInstance>* instances) {
  smt::Context z;
  Builder b{z, 1, ranks, {}, nullptr, {}, opts.timeoutMs, std::nullopt};
  std::vector<Term> assumptions, lhsWf, rhsWf;
  b.fixedInts = pinned;
  b.varTypes = lemmaVarDTypes(l);
  for (const auto& [n, v] : pinned) assumptions.push_back(z.eq(z.intVar(n), z.intVal(v)));
  for (const auto& n : symbolicSizes) assumptions.push_back(z.ge(z.intVar(n), z.intVal(1)));
  b.wf = &lhsWf;
  auto L = b.build(*l.lhs);
  if (!L.ok()) {
    if (L.error().id == "unsupported-op") { *reason = L.error().message; return Outcome::Unproven; }
    return Outcome::NotApplicable;
  }
  for (const auto& [name, t] : b.vars)
    for (const auto& s : t.shape) assumptions.push_back(z.ge(s, z.intVal(1)));
  for (const auto& c : l.conds) {
    if (c.lhs.kind == CondTerm::Kind::Shape) {  // shape(?a) == shape(?b): equal ranks, then every size
      auto A = b.var(c.lhs.var), B = b.var(c.rhs.var);
      if (!A.ok() || !B.ok() || A->shape.size() != B->shape.size() || A->shape.size() < size_t(c.lhs.value))
        return Outcome::NotApplicable;
      for (size_t d = 0; d + size_t(c.lhs.value) < A->shape.size(); ++d)
        assumptions.push_back(z.eq(A->shape[d], B->shape[d]));
      continue;
    }
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
  std::vector<Term> lhsWf2, lhsReads, rhsReads;
  b.wf = &lhsWf2;
  b.reads = &lhsReads;
  L = b.build(*l.lhs);
  if (!L.ok()) { *reason = "left side: " + L.error().message; return Outcome::Unproven; }
  if (opts.evalOp) {
    // Symbolic sizes pinned first to small values (1..4), which keeps the
    // instance queries linear; unpinned if that finds none.
    std::vector<LemmaInstance> solved;
    if (!symbolicSizes.empty()) {
      std::vector<Term> small = assumptions;
      for (const auto& n : symbolicSizes) small.push_back(z.eq(z.intVar(n), z.intVal(int64_t(1 + rng() % 4))));
      solved = solveInstances(b, intVars, small, opts.numericTrials, rng, opts.timeoutMs);
    }
    if (solved.empty()) solved = solveInstances(b, intVars, assumptions, opts.numericTrials, rng, opts.timeoutMs);
    if (solved.empty())
      solved = solveInstances(b, intVars, assumptions, opts.numericTrials, rng, opts.timeoutMs, kMaxSolvedSize,
                              kMaxSolvedSize);
    instances->insert(instances->end(), solved.begin(), solved.end());
  }
  if (!prove) return Outcome::Unproven;
  b.wf = &rhsWf;
  b.reads = &rhsReads;
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
  Term lv = L->at(idx), rv = R->at(idx);
  if (L->isBool != R->isBool) goals.push_back(z.boolVal(false));  // a bool never equals a number
  else goals.push_back(L->isInt == R->isInt ? z.eq(lv, rv) : z.eq(z.toReal(lv), z.toReal(rv)));
  // Gathers: where the right side is defined (its reads are in bounds), the
  // left side must be defined too, and equal.
  assumptions.insert(assumptions.end(), rhsReads.begin(), rhsReads.end());
  goals.insert(goals.end(), lhsReads.begin(), lhsReads.end());
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

int rankCap(const Lemma& l, int maxRank) {
  int cap = maxRank;
  for (const auto& c : l.conds)
    if (c.lhs.kind == CondTerm::Kind::Rank && c.rhs.kind == CondTerm::Kind::Const &&
        (c.op == CmpOp::Le || c.op == CmpOp::Lt))
      cap = std::max(cap, int(c.rhs.value) - (c.op == CmpOp::Lt ? 1 : 0));
  return cap;
}


std::vector<LemmaStatus> proveLemmas(const LemmaLibrary& lib, const ProveOptions& opts) {
  std::vector<LemmaStatus> out;
  for (const auto& l : lib.lemmas) {
    if (!opts.only.empty() && std::find(opts.only.begin(), opts.only.end(), l.name) == opts.only.end()) continue;
    auto t0 = std::chrono::steady_clock::now();
    LemmaStatus st;
    st.name = l.name;
    if (opts.deadline && t0 >= *opts.deadline) {
      st.timedOut = true;
      st.reason = "not attempted: the time limit ran out first";
      out.push_back(std::move(st));
      continue;
    }
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
    // Split sizes given by a variable: when the conditions bound it to a
    // short range (lo >= 1, at most 17 values) each value is proven in turn
    // (linear index arithmetic per value); otherwise it stays an Int unknown
    // >= 1 (the engine binds sizes of at least 1) and the index arithmetic
    // is nonlinear, which Z3 may not decide (the lemma is then unproven).
    std::set<std::string> sizeVars, symbolicSizes;
    sizeVarsOf(*l.lhs, sizeVars);
    sizeVarsOf(*l.rhs, sizeVars);
    std::vector<std::map<std::string, int64_t>> pins{{}};
    // Dim variables: each dim 0..R-1 in turn, R the largest rank a variable
    // takes (maxRank or a fixed rank); a dim out of range of the operand's
    // rank makes that instance not applicable, so every dim of every proven
    // rank is proven (the engine binds dims counted from 0).
    std::set<std::string> dimVars;
    dimVarsOf(*l.lhs, dimVars);
    const int cap = rankCap(l, opts.maxRank);
    int maxR = cap;
    for (const auto& [n, r] : fixed) maxR = std::max(maxR, r);
    for (const auto& n : dimVars) {
      std::vector<std::map<std::string, int64_t>> next;
      for (const auto& pm : pins)
        for (int64_t v = 0; v < maxR; ++v) { auto q = pm; q[n] = v; next.push_back(q); }
      pins = std::move(next);
    }
    for (const auto& n : sizeVars) {
      auto range = boundsOf(l, n);
      if (!range || range->first < 1 || range->second - range->first > 16) {
        symbolicSizes.insert(n);
        continue;
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
      switch (proveInstance(l, ranks, intVars, pin, symbolicSizes, !failed, opts, rng, &why, &instances)) {
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
      while (k < free.size() && ranks[free[k]] == cap) ranks[free[k++]] = 1;
      if (k == free.size()) break;
      ++ranks[free[k]];
    }
    }
    st.proven = !failed && anyProven;
    if (!failed && !anyProven) st.reason = "no applicable instance up to rank " + std::to_string(cap);
    if (general && st.proven) st.ranks.assign(provenRanks.begin(), provenRanks.end());
    checkLemmaNumerically(l, instances, opts, st);
    st.millis = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    out.push_back(std::move(st));
  }
  return out;
}

}  // namespace sp::rewrite

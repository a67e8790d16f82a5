// The Z3-backed Context: term construction and check().
#include "rewrite/smt/smt.h"

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <iostream>
#include <optional>
#include <set>
#include <sstream>

#include "ir/support.h"
#include "rewrite/smt/z3_impl.h"

namespace sp::smt {

std::optional<int64_t> Model::intValue(const std::string& name) const {
  auto it = values.find(name);
  if (it == values.end()) return std::nullopt;
  try {
    size_t pos = 0;
    int64_t v = std::stoll(it->second, &pos);
    if (pos != it->second.size()) return std::nullopt;
    return v;
  } catch (...) {
    return std::nullopt;
  }
}

std::string Model::str() const {
  std::string out;
  for (const auto& [k, v] : values) out += (out.empty() ? "" : ", ") + k + " = " + v;
  return out;
}

std::string solverVersion() { return Z3_get_full_version(); }

std::string_view verdictName(Verdict v) {
  switch (v) {
    case Verdict::Proved: return "proved";
    case Verdict::Refuted: return "refuted";
    case Verdict::Unknown: return "unknown";
  }
  return "unknown";
}

namespace {
using Clock = std::chrono::steady_clock;
double msSince(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}
}  // namespace

Context::Context() : impl_(std::make_unique<Impl>()) {}
Context::~Context() = default;

static const z3::expr& zOf(const Context* self, const Context::Impl& impl, Term t) {
  SP_ASSERT(t.context() == self, "smt term from another context or invalid");
  return impl.terms[t.id()];
}
#define SP_Z(x) zOf(this, *impl_, (x))

uint32_t Context::Impl::put(z3::expr e) {
  terms.push_back(std::move(e));
  return uint32_t(terms.size() - 1);
}


Term Context::boolVal(bool b) { return Term(this, impl_->put(impl_->z.bool_val(b))); }
Term Context::intVal(int64_t v) { return Term(this, impl_->put(impl_->z.int_val(int64_t(v)))); }
Term Context::realVal(int64_t num, int64_t den) {
  SP_ASSERT(den != 0, "realVal with zero denominator");
  std::string s = std::to_string(num) + "/" + std::to_string(den);
  return Term(this, impl_->put(impl_->z.real_val(s.c_str())));
}
Term Context::realVal(double v) {
  SP_ASSERT(std::isfinite(v), "realVal of a non-finite double");
  int exp = 0;
  double m = std::frexp(v, &exp);  // v = m * 2^exp, |m| in [0.5, 1)
  int64_t mant = int64_t(std::ldexp(m, 53));
  exp -= 53;
  while (mant != 0 && mant % 2 == 0 && exp < 0) {
    mant /= 2;
    ++exp;
  }
  std::string pow2 = "1";
  {
    // 2^|exp| as a decimal string (exp is small for doubles of interest).
    std::vector<int> digits{1};
    for (int i = 0; i < std::abs(exp); ++i) {
      int carry = 0;
      for (int& d : digits) {
        int x = d * 2 + carry;
        d = x % 10;
        carry = x / 10;
      }
      if (carry) digits.push_back(carry);
    }
    pow2.clear();
    for (auto it = digits.rbegin(); it != digits.rend(); ++it) pow2 += char('0' + *it);
  }
  z3::expr r = exp >= 0 ? impl_->z.real_val(std::to_string(mant).c_str()) *
                              impl_->z.real_val(pow2.c_str())
                        : impl_->z.real_val((std::to_string(mant) + "/" + pow2).c_str());
  return Term(this, impl_->put(r.simplify()));
}

Term Context::boolVar(const std::string& name) {
  if (auto it = impl_->vars.find(name); it != impl_->vars.end()) {
    SP_ASSERT(sort(Term(this, it->second)) == Sort::Bool, "variable " + name + " reused with another sort");
    return Term(this, it->second);
  }
  Term t(this, impl_->put(impl_->z.bool_const(name.c_str())));
  impl_->vars[name] = t.id();
  return t;
}
Term Context::intVar(const std::string& name) {
  if (auto it = impl_->vars.find(name); it != impl_->vars.end()) {
    SP_ASSERT(sort(Term(this, it->second)) == Sort::Int, "variable " + name + " reused with another sort");
    return Term(this, it->second);
  }
  Term t(this, impl_->put(impl_->z.int_const(name.c_str())));
  impl_->vars[name] = t.id();
  return t;
}
Term Context::realVar(const std::string& name) {
  if (auto it = impl_->vars.find(name); it != impl_->vars.end()) {
    SP_ASSERT(sort(Term(this, it->second)) == Sort::Real, "variable " + name + " reused with another sort");
    return Term(this, it->second);
  }
  Term t(this, impl_->put(impl_->z.real_const(name.c_str())));
  impl_->vars[name] = t.id();
  return t;
}
Term Context::freshInt(const std::string& prefix) {
  std::string name;
  do {
    name = prefix + "!" + std::to_string(impl_->freshCounter++);
  } while (impl_->vars.count(name));
  return intVar(name);
}

Sort Context::sort(Term t) const {
  const z3::expr& e = impl_->terms[t.id()];
  if (e.is_bool()) return Sort::Bool;
  if (e.is_int()) return Sort::Int;
  return Sort::Real;
}

std::string Context::str(Term t) const {
  std::ostringstream os;
  os << impl_->terms[t.id()];
  return os.str();
}

namespace {
bool numericSort(Sort s) { return s == Sort::Int || s == Sort::Real; }
}  // namespace

#define SP_BIN_NUM(NAME, OPEXPR)                                                      \
  Term Context::NAME(Term a, Term b) {                                                \
    SP_ASSERT(numericSort(sort(a)) && sort(a) == sort(b), "smt " #NAME ": sort mismatch"); \
    const z3::expr& x = SP_Z(a);                                                      \
    const z3::expr& y = SP_Z(b);                                                      \
    return Term(this, impl_->put(OPEXPR));                                            \
  }
SP_BIN_NUM(add, x + y)
SP_BIN_NUM(sub, x - y)
SP_BIN_NUM(mul, x * y)
#undef SP_BIN_NUM

Term Context::neg(Term a) {
  SP_ASSERT(numericSort(sort(a)), "smt neg: not numeric");
  return Term(this, impl_->put(-SP_Z(a)));
}
Term Context::mulConst(Term a, int64_t c) {
  SP_ASSERT(numericSort(sort(a)), "smt mulConst: not numeric");
  z3::expr k = sort(a) == Sort::Int ? impl_->z.int_val(int64_t(c)) : impl_->z.real_val(int64_t(c));
  return Term(this, impl_->put(SP_Z(a) * k));
}
Term Context::divConst(Term a, int64_t c) {
  SP_ASSERT(sort(a) == Sort::Int && c > 0, "smt divConst: int term and positive constant");
  return Term(this, impl_->put(SP_Z(a) / impl_->z.int_val(int64_t(c))));
}
Term Context::modConst(Term a, int64_t c) {
  SP_ASSERT(sort(a) == Sort::Int && c > 0, "smt modConst: int term and positive constant");
  return Term(this, impl_->put(z3::mod(SP_Z(a), impl_->z.int_val(int64_t(c)))));
}
Term Context::divInt(Term a, Term b) {
  SP_ASSERT(sort(a) == Sort::Int && sort(b) == Sort::Int, "smt divInt: int terms");
  return Term(this, impl_->put(SP_Z(a) / SP_Z(b)));
}
Term Context::modInt(Term a, Term b) {
  SP_ASSERT(sort(a) == Sort::Int && sort(b) == Sort::Int, "smt modInt: int terms");
  return Term(this, impl_->put(z3::mod(SP_Z(a), SP_Z(b))));
}
Term Context::realDiv(Term a, Term b) {
  SP_ASSERT(sort(a) == Sort::Real && sort(b) == Sort::Real, "smt realDiv: real terms");
  return Term(this, impl_->put(SP_Z(a) / SP_Z(b)));
}
Term Context::toReal(Term a) {
  if (sort(a) == Sort::Real) return a;
  SP_ASSERT(sort(a) == Sort::Int, "smt toReal: int term");
  return Term(this, impl_->put(z3::to_real(SP_Z(a))));
}
Term Context::toInt(Term a) {
  if (sort(a) == Sort::Int) return a;
  SP_ASSERT(sort(a) == Sort::Real, "smt toInt: real term");
  return Term(this, impl_->put(z3::expr(impl_->z, Z3_mk_real2int(impl_->z, SP_Z(a)))));
}
Term Context::isInt(Term a) {
  if (sort(a) == Sort::Int) return boolVal(true);
  SP_ASSERT(sort(a) == Sort::Real, "smt isInt: real term");
  return Term(this, impl_->put(z3::expr(impl_->z, Z3_mk_is_int(impl_->z, SP_Z(a)))));
}

#define SP_CMP(NAME, OPEXPR)                                                          \
  Term Context::NAME(Term a, Term b) {                                                \
    SP_ASSERT(sort(a) == sort(b), "smt " #NAME ": sort mismatch");                    \
    const z3::expr& x = SP_Z(a);                                                      \
    const z3::expr& y = SP_Z(b);                                                      \
    return Term(this, impl_->put(OPEXPR));                                            \
  }
SP_CMP(eq, x == y)
SP_CMP(ne, x != y)
SP_CMP(lt, x < y)
SP_CMP(le, x <= y)
SP_CMP(gt, x > y)
SP_CMP(ge, x >= y)
#undef SP_CMP

Term Context::and_(const std::vector<Term>& xs) {
  z3::expr_vector v(impl_->z);
  for (Term t : xs) {
    SP_ASSERT(sort(t) == Sort::Bool, "smt and: not bool");
    v.push_back(SP_Z(t));
  }
  return Term(this, impl_->put(xs.empty() ? impl_->z.bool_val(true) : z3::mk_and(v)));
}
Term Context::or_(const std::vector<Term>& xs) {
  z3::expr_vector v(impl_->z);
  for (Term t : xs) {
    SP_ASSERT(sort(t) == Sort::Bool, "smt or: not bool");
    v.push_back(SP_Z(t));
  }
  return Term(this, impl_->put(xs.empty() ? impl_->z.bool_val(false) : z3::mk_or(v)));
}
Term Context::not_(Term a) {
  SP_ASSERT(sort(a) == Sort::Bool, "smt not: not bool");
  return Term(this, impl_->put(!SP_Z(a)));
}
Term Context::implies(Term a, Term b) {
  SP_ASSERT(sort(a) == Sort::Bool && sort(b) == Sort::Bool, "smt implies: not bool");
  return Term(this, impl_->put(z3::implies(SP_Z(a), SP_Z(b))));
}
Term Context::ite(Term c, Term a, Term b) {
  SP_ASSERT(sort(c) == Sort::Bool && sort(a) == sort(b), "smt ite: sort mismatch");
  return Term(this, impl_->put(z3::ite(SP_Z(c), SP_Z(a), SP_Z(b))));
}

Func Context::func(const std::string& name, const std::vector<Sort>& args, Sort result) {
  std::string key = name + "/";
  for (Sort s : args) key += char('0' + int(s));
  key += "->" + std::string(1, char('0' + int(result)));
  if (auto it = impl_->funcByName.find(key); it != impl_->funcByName.end()) return Func{it->second};
  auto toSort = [&](Sort s) {
    return s == Sort::Bool ? impl_->z.bool_sort() : s == Sort::Int ? impl_->z.int_sort() : impl_->z.real_sort();
  };
  z3::sort_vector dom(impl_->z);
  for (Sort s : args) dom.push_back(toSort(s));
  impl_->funcs.push_back(impl_->z.function(name.c_str(), dom, toSort(result)));
  uint32_t id = uint32_t(impl_->funcs.size() - 1);
  impl_->funcByName[key] = id;
  return Func{id};
}

Term Context::apply(Func f, const std::vector<Term>& args) {
  SP_ASSERT(f.id < impl_->funcs.size(), "unknown function");
  const z3::func_decl& d = impl_->funcs[f.id];
  SP_ASSERT(d.arity() == args.size(), "smt apply: arity mismatch for " + d.name().str());
  z3::expr_vector v(impl_->z);
  for (size_t i = 0; i < args.size(); ++i) {
    const z3::expr& a = SP_Z(args[i]);
    SP_ASSERT(z3::eq(a.get_sort(), d.domain(unsigned(i))), "smt apply: argument sort mismatch");
    v.push_back(a);
  }
  return Term(this, impl_->put(d(v)));
}

Term Context::exp(Func f, Term x) {
  SP_ASSERT(f.id < impl_->funcs.size(), "unknown function");
  const z3::func_decl& d = impl_->funcs[f.id];
  SP_ASSERT(d.arity() == 1 && sort(x) == Sort::Real, "smt exp: a unary real function of a real");
  impl_->expFuncs.insert(Z3_get_ast_id(impl_->z, d));
  // the terms of x with their signs: a + b - (c - e) -> a, b, -c, e
  std::vector<z3::expr> parts;
  std::function<void(const z3::expr&, bool)> terms = [&](const z3::expr& e, bool neg) {
    Z3_decl_kind k = e.is_app() ? e.decl().decl_kind() : Z3_OP_UNINTERPRETED;
    if (k == Z3_OP_ADD) {
      for (unsigned i = 0; i < e.num_args(); ++i) terms(e.arg(i), neg);
    } else if (k == Z3_OP_SUB) {
      for (unsigned i = 0; i < e.num_args(); ++i) terms(e.arg(i), i == 0 ? neg : !neg);
    } else if (k == Z3_OP_UMINUS) {
      terms(e.arg(0), !neg);
    } else {
      parts.push_back(neg ? -e : e);
    }
  };
  terms(SP_Z(x), false);
  z3::expr out = d(parts[0]);
  for (size_t i = 1; i < parts.size(); ++i) out = out * d(parts[i]);
  return Term(this, impl_->put(out));
}

bool Context::Impl::positiveTerm(const z3::expr& e) const {
  if (isExp(e)) return true;
  if (e.is_numeral()) {
    std::string v = Z3_get_numeral_string(z, e);
    return !v.empty() && v[0] != '-' && v != "0";
  }
  if (!e.is_app()) return false;
  switch (e.decl().decl_kind()) {
    case Z3_OP_MUL: case Z3_OP_ADD: case Z3_OP_DIV:
      for (unsigned i = 0; i < e.num_args(); ++i)
        if (!positiveTerm(e.arg(i))) return false;
      return e.num_args() > 0;
    default:
      return false;
  }
}

Term Context::fold(FoldOp op, Term var, Term lo, Term hi, Term body) {
  SP_ASSERT(sort(var) == Sort::Int && sort(lo) == Sort::Int && sort(hi) == Sort::Int &&
                sort(body) == Sort::Real,
            "smt fold: sorts");
  SP_ASSERT(SP_Z(var).is_const(), "smt fold: bound variable must be a variable");
  std::string name = "fold!" + std::to_string(impl_->folds.size());
  z3::expr ph = impl_->z.real_const(name.c_str());
  impl_->folds.emplace(impl_->astId(ph), FoldInfo{op, SP_Z(var), SP_Z(lo), SP_Z(hi), SP_Z(body)});
  return Term(this, impl_->put(ph));
}

const Stats& Context::stats() const { return impl_->stats; }

z3::check_result Context::Impl::solve(const z3::expr_vector& fs, unsigned timeoutMs,
                                      z3::model* model) {
  z3::solver s(z);
  z3::params p(z);
  p.set("timeout", timeoutMs);
  s.set(p);
  for (unsigned i = 0; i < fs.size(); ++i) s.add(fs[i]);
  ++stats.queries;
  z3::check_result r = s.check();
  if (r == z3::sat && model) *model = s.get_model();
  if (r == z3::unknown) lastReason = s.reason_unknown();
  return r;
}

bool Context::Impl::implied(const std::vector<z3::expr>& ctx, const z3::expr& goal,
                            unsigned timeoutMs) {
  z3::expr_vector fs(z);
  for (const auto& c : ctx) fs.push_back(c);
  fs.push_back(!goal);
  return solve(fs, timeoutMs, nullptr) == z3::unsat;
}

namespace {
void collectConsts(const z3::expr& e, std::map<std::string, z3::expr>& out,
                   std::set<unsigned>& seen) {
  unsigned id = Z3_get_ast_id(e.ctx(), e);
  if (!seen.insert(id).second) return;
  if (e.is_const() && e.decl().decl_kind() == Z3_OP_UNINTERPRETED) {
    std::string n = e.decl().name().str();
    if (n.rfind("fold!", 0) != 0 && n.find('!') == std::string::npos) out.emplace(n, e);
    return;
  }
  if (e.is_app())
    for (unsigned i = 0; i < e.num_args(); ++i) collectConsts(e.arg(i), out, seen);
}
}  // namespace

namespace {
bool isVar(const z3::expr& e) {
  return e.is_const() && e.decl().decl_kind() == Z3_OP_UNINTERPRETED && e.is_int();
}
std::string nameOf(const z3::expr& e) { return e.decl().name().str(); }
}  // namespace

// Union-find over Int variables equated by top-level assumptions.
static void computeEqualities(Context::Impl& impl, const std::vector<Term>& assumptions) {
  std::map<std::string, std::string> parent;
  std::map<std::string, z3::expr> byName;
  std::function<std::string(const std::string&)> find = [&](const std::string& x) {
    auto it = parent.find(x);
    if (it == parent.end() || it->second == x) return x;
    return it->second = find(it->second);
  };
  std::function<void(const z3::expr&)> visit = [&](const z3::expr& e) {
    if (e.is_app() && e.decl().decl_kind() == Z3_OP_AND) {
      for (unsigned i = 0; i < e.num_args(); ++i) visit(e.arg(i));
      return;
    }
    if (!(e.is_app() && e.decl().decl_kind() == Z3_OP_EQ && isVar(e.arg(0)) && isVar(e.arg(1)))) return;
    std::string a = nameOf(e.arg(0)), b = nameOf(e.arg(1));
    byName.emplace(a, e.arg(0));
    byName.emplace(b, e.arg(1));
    parent.emplace(a, a);
    parent.emplace(b, b);
    std::string ra = find(a), rb = find(b);
    if (ra == rb) return;
    if (rb < ra) std::swap(ra, rb);
    parent[rb] = ra;  // the smaller name represents the class
  };
  for (Term t : assumptions) visit(impl.terms[t.id()]);
  impl.eqFrom = z3::expr_vector(impl.z);
  impl.eqTo = z3::expr_vector(impl.z);
  for (const auto& [name, _] : parent) {
    std::string r = find(name);
    if (r == name) continue;
    impl.eqFrom.push_back(byName.at(name));
    impl.eqTo.push_back(byName.at(r));
  }
}

CheckResult Context::check(const std::vector<Term>& assumptions, Term goal,
                           const CheckOptions& opts) {
  auto t0 = Clock::now();
  CheckResult res;
  try {
    std::vector<z3::expr> ctx;
    bool abstracted = false;
    z3::expr_vector fs(impl_->z);
    computeEqualities(*impl_, assumptions);
    for (Term a : assumptions) {
      z3::expr e = impl_->normalize(impl_->canon(SP_Z(a)), ctx, opts.timeoutMs, &abstracted);
      ctx.push_back(e);
      fs.push_back(e);
    }
    z3::expr g = impl_->normalize(impl_->canon(SP_Z(goal)), ctx, opts.timeoutMs, &abstracted);
    // Facts of real exp: every application in the query is positive, and so
    // is a sum fold of positive terms over a nonempty range (no walk of the
    // query where no exp was ever built).
    for (const auto& p : impl_->positive) fs.push_back(p);
    impl_->positive.clear();
    if (!impl_->expFuncs.empty()) {
      std::set<unsigned> seen;
      std::vector<z3::expr> apps;
      std::function<void(const z3::expr&)> visit = [&](const z3::expr& e) {
        if (!seen.insert(impl_->astId(e)).second || !e.is_app()) return;
        if (impl_->isExp(e)) apps.push_back(e);
        for (unsigned i = 0; i < e.num_args(); ++i) visit(e.arg(i));
      };
      for (unsigned k = 0; k < fs.size(); ++k) visit(fs[k]);
      visit(g);
      for (const auto& a : apps) fs.push_back(a > 0);
      // exp(-u) exp(w) = 1 where w = u, for each application of one exp
      // function to a negated term and each other application of it (the
      // same u may be read at index terms equal only under the sizes:
      // broadcast reads), so exp(x - m) exp(m - n) = exp(x - n), the shift
      // of an online softmax's partial results to a new maximum.
      auto negated = [](const z3::expr& t) -> std::optional<z3::expr> {  // -u as built or simplified
        if (!t.is_app()) return std::nullopt;
        if (t.decl().decl_kind() == Z3_OP_UMINUS) return t.arg(0);
        if (t.decl().decl_kind() == Z3_OP_MUL && t.num_args() == 2)
          for (unsigned i = 0; i < 2; ++i)
            if (t.arg(i).is_numeral() && Z3_get_numeral_string(t.ctx(), t.arg(i)) == std::string("-1"))
              return t.arg(1 - i);
        return std::nullopt;
      };
      for (const auto& a : apps) {
        auto u = negated(a.arg(0));
        if (!u) continue;
        for (const auto& b : apps)
          if (Z3_get_ast_id(impl_->z, a.decl()) == Z3_get_ast_id(impl_->z, b.decl()) && !negated(b.arg(0)))
            fs.push_back(z3::implies(*u == b.arg(0), a * b == impl_->z.real_val(1)));
      }
    }
    // The eliminated equalities stay asserted, so models stay complete.
    for (unsigned k = 0; k < impl_->eqFrom.size(); ++k) fs.push_back(impl_->eqFrom[k] == impl_->eqTo[k]);
    impl_->eqFrom = z3::expr_vector(impl_->z);
    impl_->eqTo = z3::expr_vector(impl_->z);
    fs.push_back(!g);
    z3::model m(impl_->z);
    z3::check_result r = impl_->solve(fs, opts.timeoutMs, &m);
    if (r == z3::unsat) {
      res.verdict = Verdict::Proved;
    } else if (r == z3::sat && !abstracted) {
      res.verdict = Verdict::Refuted;
      std::map<std::string, z3::expr> consts;
      std::set<unsigned> seen;
      for (unsigned i = 0; i < fs.size(); ++i) collectConsts(fs[i], consts, seen);
      for (const auto& [name, c] : consts) {
        std::ostringstream os;
        os << m.eval(c, true);
        res.model.values[name] = os.str();
      }
    } else {
      // SHARDPROOF_SMT_DUMP=1: the query that was not decided, as Z3 sees
      // it after fold elimination (for working on the prover).
      if (const char* d = std::getenv("SHARDPROOF_SMT_DUMP"); d && *d == '1') {
        std::cerr << "smt query not decided (" << (r == z3::sat ? "sat, abstracted" : "unknown") << "):\n";
        for (unsigned i = 0; i < fs.size(); ++i) std::cerr << "  " << fs[i] << "\n";
      }
      res.verdict = Verdict::Unknown;
      res.reason = r == z3::sat ? "fold-abstraction: a counterexample exists for the abstracted "
                                  "folds, which may be spurious"
                                : "solver: " + impl_->lastReason;
    }
  } catch (const z3::exception& e) {
    res.verdict = Verdict::Unknown;
    res.reason = std::string("solver-error: ") + e.msg();
  }
  res.millis = msSince(t0);
  impl_->stats.millis += res.millis;
  if (res.verdict == Verdict::Proved) ++impl_->stats.proved;
  else if (res.verdict == Verdict::Refuted) ++impl_->stats.refuted;
  else ++impl_->stats.unknown;
  return res;
}

CheckResult Context::satisfiable(const std::vector<Term>& formulas, const CheckOptions& opts) {
  CheckResult r = check(formulas, boolVal(false), opts);
  // check() proves `false`: Refuted means the formulas are satisfiable.
  return r;
}

Term operator+(Term a, Term b) { return a.context()->add(a, b); }
Term operator-(Term a, Term b) { return a.context()->sub(a, b); }
Term operator*(Term a, Term b) { return a.context()->mul(a, b); }
Term operator==(Term a, Term b) { return a.context()->eq(a, b); }
Term operator<(Term a, Term b) { return a.context()->lt(a, b); }
Term operator<=(Term a, Term b) { return a.context()->le(a, b); }
Term operator&&(Term a, Term b) { return a.context()->and_({a, b}); }

}  // namespace sp::smt

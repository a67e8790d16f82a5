#pragma once
// The SMT wrapper: the only door to Z3 (whose headers appear only in
// rewrite/smt/*.cpp). Terms are handles into a Context; no Z3 type leaks.
//
// Besides linear integer arithmetic (side conditions: slice bounds,
// divisibility, rank-dependent offsets) it offers what the lemma prover
// needs: reals, uninterpreted functions and `fold` terms - a big operator
// (sum / max / min) of a body over an integer range [lo, hi). Folds are
// handled soundly inside check(): they are split at the index thresholds of
// the body's conditions, shifted to start at 0, and each resulting fold is
// replaced by an uninterpreted function of its length and free variables
// (same body => same function). See docs/lemmas.md for the argument.
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace sp::smt {

enum class Sort : uint8_t { Bool, Int, Real };

class Context;

// A handle to a term of a Context. Copyable, cheap; only valid while its
// Context lives.
class Term {
 public:
  Term() = default;
  bool valid() const { return ctx_ != nullptr; }
  Context* context() const { return ctx_; }
  uint32_t id() const { return id_; }

 private:
  friend class Context;
  Term(Context* c, uint32_t id) : ctx_(c), id_(id) {}
  Context* ctx_ = nullptr;
  uint32_t id_ = 0;
};

struct Func {
  uint32_t id = 0;
};

enum class FoldOp : uint8_t { Sum, Max, Min };

// Values of the named variables in a counterexample, printed by Z3
// ("3", "-1/2", "true").
struct Model {
  std::map<std::string, std::string> values;
  std::optional<int64_t> intValue(const std::string& name) const;
  std::string str() const;  // "r = 1, n = 4"
};

enum class Verdict : uint8_t { Proved, Refuted, Unknown };
std::string_view verdictName(Verdict v);  // "proved", "refuted", "unknown"
// The solver's full version string ("Z3 4.8.12.0"): part of proof cache keys.
std::string solverVersion();

struct CheckResult {
  Verdict verdict = Verdict::Unknown;
  Model model;         // Refuted: a counterexample to the goal
  std::string reason;  // Unknown: why ("timeout", "fold-abstraction", ...)
  double millis = 0;
};

struct CheckOptions {
  unsigned timeoutMs = 10000;
};

struct Stats {
  int64_t queries = 0;  // solver calls, including internal fold queries
  int64_t proved = 0;
  int64_t refuted = 0;
  int64_t unknown = 0;
  double millis = 0;
};

class Context {
 public:
  Context();
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  Term boolVal(bool b);
  Term intVal(int64_t v);
  Term realVal(int64_t num, int64_t den = 1);
  Term realVal(double v);  // exact binary value of v
  // Variables are identified by name: the same name gives the same term.
  Term boolVar(const std::string& name);
  Term intVar(const std::string& name);
  Term realVar(const std::string& name);
  // A new variable whose name starts with `prefix` and is unused so far.
  Term freshInt(const std::string& prefix);

  Term add(Term a, Term b);
  Term sub(Term a, Term b);
  Term mul(Term a, Term b);  // nonlinear only over reals (lemma proofs)
  Term neg(Term a);
  Term mulConst(Term a, int64_t c);
  Term divConst(Term a, int64_t c);  // integer floor division by a positive constant
  Term modConst(Term a, int64_t c);  // integer modulus by a positive constant
  // Integer floor division and modulus by an Int term (nonlinear: Z3's NIA;
  // the caller assumes b > 0).
  Term divInt(Term a, Term b);
  Term modInt(Term a, Term b);
  Term realDiv(Term a, Term b);      // real division (x/0 is some fixed value)
  Term toReal(Term a);
  Term toInt(Term a);   // floor of a real term (an int term is itself)
  Term isInt(Term a);   // Bool: the real term is an integer (true for int terms)

  Term eq(Term a, Term b);
  Term ne(Term a, Term b);
  Term lt(Term a, Term b);
  Term le(Term a, Term b);
  Term gt(Term a, Term b);
  Term ge(Term a, Term b);
  Term and_(const std::vector<Term>& xs);
  Term or_(const std::vector<Term>& xs);
  Term not_(Term a);
  Term implies(Term a, Term b);
  Term ite(Term c, Term a, Term b);

  // Uninterpreted functions: the same name and signature give the same Func.
  Func func(const std::string& name, const std::vector<Sort>& args, Sort result);
  Term apply(Func f, const std::vector<Term>& args);

  // The exponential, f a unary Real function standing for exp: of a sum,
  // the product over its terms, exp(a + b - c) = exp(a) exp(b) exp(-c) (the
  // real exponential's law); every application is positive in check(), and
  // a sum fold whose body is a product of exponentials and positive
  // numerals is positive over a nonempty range. These are facts of real
  // exp, the only meaning the prover gives it.
  Term exp(Func f, Term x);

  // op_{var in [lo, hi)} body. `var` must be an Int variable used only as
  // this fold's bound variable (take it from freshInt). body: Real.
  Term fold(FoldOp op, Term var, Term lo, Term hi, Term body);

  Sort sort(Term t) const;
  std::string str(Term t) const;

  // Proves `goal` under `assumptions` (checks that assumptions && !goal is
  // unsat). Never throws; solver errors become Unknown with a reason.
  CheckResult check(const std::vector<Term>& assumptions, Term goal,
                    const CheckOptions& opts = {});
  // Convenience: is `formula` satisfiable? Returns a model if so.
  CheckResult satisfiable(const std::vector<Term>& formulas, const CheckOptions& opts = {});

  const Stats& stats() const;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
};

// Operators for readable formulas (both terms must share a context).
Term operator+(Term a, Term b);
Term operator-(Term a, Term b);
Term operator*(Term a, Term b);
Term operator==(Term a, Term b);
Term operator<(Term a, Term b);
Term operator<=(Term a, Term b);
Term operator&&(Term a, Term b);

}  // namespace sp::smt

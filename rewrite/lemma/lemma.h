#pragma once
// Lemmas as data: rewrite rules loaded from rewrite/lemmas/*.rules (format in
// docs/lemmas.md), each proven with Z3 by rewrite/lemma/lemma_prove.cpp.
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ir/interpreter.h"
#include "ir/op.h"
#include "ir/support.h"

namespace sp::rewrite {

// Integer terms of side conditions.
struct CondTerm {
  // Mod: mod(a, b), b > 0. Shape: shape(?x), only in `shape(?a) == shape(?b)`
  // (equal ranks and equal sizes at every dim); `shape(?x, :-k)` (value = k)
  // leaves out the last k dims: equal ranks, equal sizes at dims 0..rank-k-1
  // (concat parts that agree off their last dim).
  enum class Kind : uint8_t { Const, Size, Rank, Var, Add, Sub, Mul, Mod, Shape };
  Kind kind = Kind::Const;
  int64_t value = 0;     // Const; Size: the dim (may be negative)
  std::string var;       // Size/Rank: tensor variable; Var: attribute variable
  std::string dimVar;    // Size: the dim is this dim variable (size(?a, ?d)), not `value`
  std::vector<CondTerm> args;
  std::string str() const;
};

// An attribute argument of a pattern: a literal or a lemma variable (only
// for the integer bounds of slice and the factor of scale).
struct PatAttr {
  // Expr: an integer term over the left side's variables and sizes (right
  // side slice bounds only), e.g. ?s - size(?a, -1).
  // Recip: the reciprocal of such a term (right side scale factors only,
  // written factor=1/TERM), e.g. 1/(size(?a, 0) + size(?b, 0)): a mean's
  // divisor computed from sizes.
  enum class Kind : uint8_t { Int, Float, Ints, Str, Var, Expr, Recip };
  std::string name;
  Kind kind = Kind::Int;
  int64_t i = 0;
  double f = 0;
  std::vector<int64_t> ints;
  std::string text;  // Str value or Var name
  std::shared_ptr<const CondTerm> expr;  // Expr, Recip
  // Var written as a one-element list, `axes=[?e]`: a reduction's axis, a
  // dim variable like concat's dim=?d (bound counted from 0, pinned to each
  // dim in turn by the prover).
  bool list = false;
};

struct Pattern;
using PatPtr = std::shared_ptr<const Pattern>;

// The relation operators that lemma patterns use besides IR ops; concat and
// slice shadow the IR ops of the same name (same meaning, single axis).
// split_last(?x, size=k): the row-major reshape [..., D] -> [..., D/k, k]
// (D a multiple of k); merge_last(?x, size=k): its inverse [..., H, k] ->
// [..., H*k]. Both match IR reshape nodes; a variable size must be bounded by
// the conditions (the prover proves each value of the range).
// merge_dims(?x, dim=d, size=k): the row-major reshape merging dims d and
// d+1 of x (d counted in x's rank, negative from the end; dim d+1 of size
// k): [..., A, k, ...] -> [..., A*k, ...] (GQA: KV heads times their query
// group back to query heads). Same size rules as merge_last.
// split_dims(?x, dim=d, size=k): its inverse [..., A*k, ...] -> [..., A, k,
// ...] (size=1: a unit dim inserted after dim d, an unsqueeze).
// const(value=v): a rank-0 IR constant whose value is the integer v (a
// literal or a variable bound by the match, usable in conditions; any dtype,
// so 0.0 is value=0). Left sides only.
// OpVar: an op variable of a trait, `?f:unary(?x)` where it is declared
// (its first occurrence, on the left side), `?f(?x)` elsewhere: the same op
// with the same attributes as the node the declaration matched.
enum class PatOp : uint8_t { Var, Ir, Concat, Sum, Slice, Scale, Permute, SplitLast, MergeLast, MergeDims, SplitDims, Const, OpVar };

// Traits an op variable ranges over (ir/ops.def categories, docs/lemmas.md):
// Unary: the same-shape elementwise ops of category Unary except cast
// (changes the dtype) and not (bool only); Binary: categories Binary and Compare (numpy
// broadcasting). Each is a function of its operands' elements at the same
// (broadcast) index, which is what the prover assumes of an op variable.
enum class OpTrait : uint8_t { None, Unary, Binary };
std::optional<OpTrait> opTraitByName(const std::string& name);
const char* opTraitName(OpTrait t);
int opTraitArity(OpTrait t);
bool opHasTrait(ir::OpKind op, OpTrait t);
// The IR ops of a trait, in ops.def order.
std::vector<ir::OpKind> opsOfTrait(OpTrait t);

struct Pattern;
// A dim variable attribute: concat's and slice's dim=?d, a reduction's
// axes=[?e], a normalization's axis=?e (softmax, log_softmax, layer_norm,
// rms_norm). Bound to the matched node's dim counted from 0; the prover
// proves each dim in turn (lemma_prove.cpp pins it).
bool isDimVarAttr(const Pattern& p, const PatAttr& a);

struct Pattern {
  PatOp op = PatOp::Var;
  std::string name;           // Var, OpVar: variable name; else the op name
  ir::OpKind irOp = ir::OpKind::Identity;  // Ir
  OpTrait trait = OpTrait::None;           // OpVar
  bool declares = false;                   // OpVar: written `?f:trait(...)`
  std::vector<PatPtr> args;
  std::vector<PatAttr> attrs; // as written
  const PatAttr* attr(const std::string& n) const;
  std::string str() const;
};

enum class CmpOp : uint8_t { Eq, Ne, Lt, Le, Gt, Ge };

struct Cond {
  CondTerm lhs;
  CmpOp op = CmpOp::Eq;
  CondTerm rhs;
  std::string str() const;
};

struct Lemma {
  std::string name;        // stable kebab-case id
  PatPtr lhs, rhs;
  std::vector<Cond> conds; // conjunction
  std::string location;    // file:line
  std::string str() const; // the rule, re-printed
};

struct LemmaLibrary {
  std::vector<Lemma> lemmas;  // ordered by file name, then line
  const Lemma* find(const std::string& name) const;
};

// Parses one rules file. Errors carry file:line:col.
Result<std::vector<Lemma>> parseLemmas(const std::string& text, const std::string& file);
// Loads every *.rules file of `dir` (sorted by name); duplicate names are errors.
Result<LemmaLibrary> loadLemmas(const std::string& dir);
// $SHARDPROOF_LEMMA_DIR if set, else the source tree's rewrite/lemmas.
std::string defaultLemmaDir();

// ---- proofs (rewrite/lemma/lemma_prove.cpp) and numeric checks ----

using EvalOpFn = std::function<Result<std::vector<ir::Tensor>>(
    ir::OpKind, const ir::AttrMap&, const std::vector<ir::Tensor>&)>;

struct ProveOptions {
  int maxRank = 4;            // each default-rank tensor variable takes every rank 1..maxRank
  unsigned timeoutMs = 20000; // per query
  EvalOpFn evalOp;            // numeric check; empty: skipped
  int numericTrials = 2;      // solved instances per rank assignment (plus random ones)
  uint64_t seed = 1;
  std::vector<std::string> only;  // lemma names; empty: all
  // Lemmas not started by then stay unproven (LemmaStatus::timedOut); not
  // part of the proof-cache context: it never changes what a proof means.
  std::optional<std::chrono::steady_clock::time_point> deadline;
};

// The highest tensor rank the default-rank variables of `l` take: maxRank,
// or more where the lemma says how far its proof must go with a
// `rank(?x) <= k` (or `< k`) condition: a lemma about rank-5 tensors (the
// gradient of GQA's KV expand) proves ranks up to 5 without every lemma
// paying for rank 5.
int rankCap(const Lemma& l, int maxRank);

enum class NumericState : uint8_t { Skipped, Ok, Failed };

struct LemmaStatus {
  std::string name;
  bool proven = false;
  std::string reason;          // unproven: why (query verdict, unsupported op, ...)
  std::vector<int> ranks;      // ranks of default-rank variables in the proven instances
  NumericState numeric = NumericState::Skipped;
  double maxError = 0;
  std::string numericNote;     // skipped/failed: why
  double millis = 0;
  bool timedOut = false;       // not attempted: ProveOptions::deadline had passed
};

// Concrete shapes (and integer attribute variables) of one instance of a
// lemma's variables where the left side is well typed and the conditions
// hold; solved by the prover for the numeric check.
struct LemmaInstance {
  std::map<std::string, std::vector<int64_t>> dims;
  std::map<std::string, int64_t> ints;
};

// Runs both sides with opts.evalOp on random values: on each solved
// instance, and on random shapes the interpreter accepts for the left side.
// The dtypes a lemma's patterns force on its tensor variables, as the IR
// types them: i64 for a variable reaching a gather/gather_elements index
// through ops that keep the dtype, bool for one reaching a condition (where,
// and/or/xor/not); absent: a float. The prover makes those Int/Bool valued,
// the numeric check draws them so.
std::map<std::string, ir::DType> lemmaVarDTypes(const Lemma& l);

void checkLemmaNumerically(const Lemma& l, const std::vector<LemmaInstance>& solved, const ProveOptions& opts,
                           LemmaStatus& st);

std::vector<LemmaStatus> proveLemmas(const LemmaLibrary& lib, const ProveOptions& opts);
// The `shardproof lemmas --prove` table: one line per lemma plus a summary.
std::string renderLemmaTable(const std::vector<LemmaStatus>& st);

}  // namespace sp::rewrite

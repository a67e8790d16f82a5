#pragma once
// Refinement verification: does distributed program D refine sequential
// graph S under input relations R_in? (DESIGN.md, "Refinement and the
// verdict".) The three-way verdict is never approximated: "verified" only
// when every step is a proven lemma, a lowering of a collective, an op's own
// definition or an input relation, with integer side conditions discharged.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/program.h"
#include "rewrite/engine/egraph.h"
#include "rewrite/relation/relation_text.h"

namespace sp::rewrite {

enum class Verdict { Verified, Refuted, Inconclusive };
std::string_view verdictName(Verdict v);  // "verified", "refuted", "inconclusive"

// Default witness limit in estimated multiply-adds (VerifyOptions).
inline constexpr double kDefaultWitnessWorkLimit = 5e12;

struct VerifyOptions {
  std::vector<std::string> outputs;  // S outputs that must be rebuilt; empty: all
  double timeLimitSeconds = 300;     // whole run, witness included; running out is "inconclusive"
  Budget perOpBudget;                // e-graph budget per S op
  int exploreHops = 5;               // bounded exploration of D per S op (5: a vocab-parallel loss, 5 ops from the logits)
  // Rank folding (rewrite/engine/fold.h): an SPMD program over one group is
  // checked once for a symbolic rank; false: always per rank (--no-fold).
  bool fold = true;
  // false (with fold): only rank folding decides; what it does not decide is
  // inconclusive (the repair search's first, cheap pass).
  bool perRank = true;
  bool memoize = true;               // layer memoization (verify.cpp); false: every S op saturated
  uint64_t seed = 0;                 // witness inputs
  double tolerance = 1e-4;           // witness: relative divergence that counts
  // Witness: above this many estimated multiply-adds (the cones of the
  // compared values in S and in every D rank) it is not run and the verdict
  // stays inconclusive, saying so. The default takes about a minute on two
  // cores; `shardproof verify --witness-limit`.
  double witnessWorkLimit = kDefaultWitnessWorkLimit;
  // Witness: at most this many seconds of its own, within timeLimitSeconds
  // (which covers the whole run, witness included); negative: no cap of its
  // own. Reaching either limit leaves the verdict inconclusive, saying how
  // far the interpreter got. 0 stops it before its first op (tests).
  double witnessTimeLimitSeconds = -1;
  // Witness: first try one with S's row dims (batch, and what it is
  // flattened into) shrunk to one row, where every op of S and D provably
  // treats rows alike (rewrite/witness/witness_shrink.h); it only refutes. false:
  // full size only (--no-shrink-witness).
  bool shrinkWitness = true;
  // ... from this many estimated multiply-adds of the full-size witness on
  // (below, the full witness takes about a second and the analysis of every
  // op of every rank is not worth it).
  double shrinkWitnessFrom = 2e9;
  // Progress of the witness run: (estimated work done, work total, "seq mm_4" / "rank 1 mm_4").
  std::function<void(double, double, const std::string&)> witnessProgress;
  std::string lemmaDir;              // empty: defaultLemmaDir()
  // Lemma proof cache (rewrite/lemma/lemma_cache.h): empty: defaultProofCacheDir();
  // "-": none, every lemma is proven in this process.
  std::string proofCacheDir;
  // Progress on long runs: (S ops done, S ops total, current S op name).
  std::function<void(size_t, size_t, const std::string&)> progress;
  // Refuted: at most this many seconds (within timeLimitSeconds) searching
  // single edits of one collective (reduce mode, dim, group) under which D
  // verifies (rewrite/search/repair.cpp); 0: no search. `shardproof verify
  // --repair-limit`, 10 there.
  double repairSeconds = 0;
};

struct OutputResult {
  std::string name;      // S output
  std::string relation;  // printed clean relation over D tensors (relation syntax)
  RelPtr expr;           // the same, structured (null when not rebuilt)
};

struct ErrorStat {
  double maxAbsErr = 0;
  double maxRelErr = 0;
};

struct Witness {
  uint64_t seed = 0;
  ErrorStat atLocalized;                      // S op output vs closest D candidate
  std::string atLocalizedRebuild;             // that candidate ("sum over tp of h"), empty if none
  std::vector<std::pair<std::string, ErrorStat>> outputs;  // per S output
  ErrorStat worstOutput;
  // Nonempty: the run had S's row dims shrunk, and why that refutes the
  // program at its own size (rewrite/witness/witness_shrink.h).
  std::string shrunk;
  // Nonempty: D faulted where S ran (an index out of range on a rank:
  // "rank 0: gather 'g' (d.sp:16:5): index 2 is out of range for dim 2");
  // D computes no value there, so it cannot hold S's.
  std::string fault;
};

// One D tensor on one rank, as a failure names it: printed "r0:h2" (the
// report's text and JSON), read by the witness and the repair search as
// the rank and the value's name, never parsed back from the text.
struct DistRef {
  int64_t rank = 0;
  std::string name;
  std::string str() const { return "r" + std::to_string(rank) + ":" + name; }
  bool operator==(const DistRef&) const = default;
  auto operator<=>(const DistRef&) const = default;
};
std::vector<std::string> strs(const std::vector<DistRef>& refs);

struct Failure {
  std::string seqOp;         // "matmul 'h2'"
  std::string seqValue;      // S value with no relation
  ir::SourceLoc location;    // its source location
  std::string message;       // one line, in the user's terms
  std::vector<DistRef> closestDist;  // D tensors that came closest (r0:h2)
  std::optional<Witness> witness;        // refuted: always present
  // Refuted, with VerifyOptions::repairSeconds: an edit of one collective
  // under which D verifies ("all_reduce 'se' (loc) reducing with sum instead
  // of avg"); empty: none searched or found.
  std::string repair;
  // Groups over which the explanation found rank-local partial sums that D
  // never adds up (the repair search tries an all_reduce over them).
  std::vector<std::string> missingSumGroups;
  // Partial sums used as whole: the D values (r0:h) where they began
  // (FoldOutcome::sumOrigins), where the repair search tries a sum first.
  std::vector<DistRef> sumOrigins;
  // Localized by rank folding over the whole program: the repair search's
  // edited programs, SPMD as well, are decided by folding alone.
  bool foldLocalized = false;
  // The per-rank engine found no relation here and nothing names what D
  // does wrong: perhaps the engine's own gap (folding's reading decides
  // what the report says then).
  bool unexplainedGap = false;
};

// A failure at S value `value` (of op `what`, at `loc`), said by `message`.
inline Failure failureAt(std::string what, std::string value, ir::SourceLoc loc, std::string message) {
  Failure f;
  f.seqOp = std::move(what);
  f.seqValue = std::move(value);
  f.location = std::move(loc);
  f.message = std::move(message);
  return f;
}

struct VerifyStats {
  double seconds = 0;
  int64_t seqOps = 0;
  int64_t distOps = 0;
  int64_t lemmasApplied = 0;
  int64_t z3Queries = 0;
  int64_t memoHits = 0;    // S ops whose result was transferred from an identical one (layer memoization)
  double peakRssMb = 0;
};

struct VerifyReport {
  Verdict verdict = Verdict::Inconclusive;
  std::vector<OutputResult> outputs;
  std::optional<Failure> failure;   // refuted or inconclusive
  std::string reason;               // inconclusive: what ran out or is missing
  std::vector<std::string> assumptions;  // e.g. "real arithmetic (no rounding)"
  VerifyStats stats;
};

Result<VerifyReport> verify(const ir::Graph& seq, const ir::Program& dist,
                            const RelationFile& relations, const VerifyOptions& opts);
// The same over text IR: S (seq.sp), D (dist.sp) and the relation file
// (relations.rel), as a generator writes them; a parse error names the file.
Result<VerifyReport> verifyTexts(const std::string& seq, const std::string& dist, const std::string& relations,
                                 const VerifyOptions& opts);

// Proves (or reads from the proof cache) the lemma library that verify()
// with these options uses, with no time limit, and keeps it for the
// process: later verify() calls spend their time limit on verification.
Status prepareLemmaLibrary(const VerifyOptions& opts);

// The proof search's memory: an address-space limit of 85% of physical
// memory (SHARDPROOF_MEMORY_LIMIT_MB overrides; 0: none) on this process, so
// a search or witness that outgrows the machine fails an allocation, which
// verify reports as inconclusive, instead of being killed by the kernel.
// For processes that verify (the CLI, benchmark children); not for CUDA
// execution (its runtime reserves address space far beyond what it uses).
void limitSearchMemory();

// Proposes input relations from names and shapes: a D input named like an S
// input is replicated when shapes match, or a concat over the mesh axis whose
// size divides exactly one dim; a dropout stream without a namesake, the
// S stream at the same source line or position; an unresolved module
// constant (_tensor_constantN) is declared unrelated with the reason
// (docs/relations.md). Other unmatched D inputs are errors naming them.
Result<RelationFile> inferRelations(const ir::Graph& seq, const ir::Program& dist);

}  // namespace sp::rewrite

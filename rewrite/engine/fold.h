#pragma once
// Rank folding (DESIGN.md, "Rank folding"). When every rank of D runs the
// same graph and all of D's collectives act on one group that spans the
// ranks (an SPMD program over one mesh axis: TP, DP, CP, SP), D is checked
// once, for a symbolic rank r of a group of N ranks, instead of once per
// rank: each D value gets a layout over the group, a fact about all ranks at
// once,
//   rep   v_r = E                   for every r (replicated)
//   split E = concat_r v_r along d  (an even shard per rank, rank order)
//   sum   E = sum_r v_r             (partial sums)
// where E is an expression over S's inputs, hash-consed with S's own values
// (modulo scalar factors: E = k * node). Layouts flow through D's ops by
// schemas over the traits of ir/ops.def (elementwise, broadcasting,
// contraction, reduction, normalization, layout), each the n-ary form of the
// proven binary lemmas it names, and through D's collectives by their
// semantics, with the collectives matched by the collective-order module
// (rewrite/verify/lower.h). An S output is rebuilt when a D output's layout names
// exactly its expression. Nothing here depends on N: the cost of a layer is
// the same at TP 2 and TP 1024.
//
// Several groups whose groups cross (DP x TP on a [dp, tp] mesh, DP x CP x
// TP, up to four) fold the same way with a layout over each (Fact::layB):
// each group's layout is decided by the schemas with the others held
// fixed, and S's types and the expression are checked once with all. The
// groups nest in one order (the group of consecutive ranks innermost, the
// others by their ranks' stride), which is also the order of the pieces
// when two groups split one dim (sequence parallel inside context parallel
// chunks); such nested splits are taken by ops acting on each position of
// the dim alike and by collectives over a group no inner group's split of
// the dim interleaves. With send/recv ([pp, dp, tp]), each pipeline stage is
// a product of the groups, folded on its own.
//
// Folding only ever says "verified" or "not decided": a program it cannot
// fold, an op with no schema or an S op computed differently in D leaves the
// verdict to the per-rank engine (rewrite/verify/verify.cpp), which also refutes.
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "rewrite/engine/engine_verify.h"
#include "rewrite/verify/lower.h"
#include "rewrite/relation/relation_text.h"
#include "rewrite/verify/verify.h"

namespace sp::rewrite {

struct FoldInput {
  const ir::Graph* seq = nullptr;
  const ir::Program* dist = nullptr;
  const RelationFile* relations = nullptr;
  // The input relations as checked (rewrite/engine/engine_verify.h).
  const std::vector<CheckedInput>* inputs = nullptr;
  const DistModel* model = nullptr;          // lowered D: the collectives' matching
  std::vector<std::string> wanted;           // S values to rebuild
  std::map<std::string, RelPtr> expected;    // concretized expect lines
  // Whether the library holds a proven lemma of this name (a schema whose
  // lemmas are not all proven is not used).
  std::function<bool(const std::string&)> proven;
  // Instead of inputs, where checkInputTemplates held: each D input's
  // relation is its rank class's template, so folding never looks at a
  // rank's relations by itself; what it cannot fold this way it leaves
  // (needsRanks). With no model as well (ir::uniformSpmd), the order of
  // collectives is known from the graph: each instance a part of its
  // group's partition.
  const TemplateInputs* templates = nullptr;
};

struct FoldOutcome {
  bool verified = false;
  std::string why;                   // not verified: why folding did not decide
  std::vector<OutputResult> outputs; // verified: one per wanted value, in order
  std::string group;                 // the folded group ("tp"; with several, the innermost)
  int64_t groupSize = 0;             // ranks folded into one
  int64_t copies = 1;                // micro-batch copies folded into one (rank graphs repeating the step)
  std::string foldedOver;            // several groups: "groups dp x cp x tp (2 x 2 x 8 ranks)"
  int64_t steps = 0;                 // layout rule applications
  std::vector<std::string> schemas;  // the schemas used, with the lemmas each lifts
  // Not verified, after the whole program was folded: the wanted values no
  // D value's layout names as required, and for the first of them what D
  // holds instead, said in the user's terms, with the D values it concerns
  // ("r0:y") and the groups over which D leaves partial sums. A refutation
  // still needs the witness (rewrite/witness/witness_verdict.cpp).
  std::vector<std::string> unmatched;
  std::string diagnosis;
  std::vector<DistRef> closest;
  std::vector<std::string> missingSumGroups;
  // Partial sums used as whole: the D values ("r0:h") where they began (a
  // contraction of whole or split operands, an input), where the missing
  // sum most likely belongs: the repair search tries an all_reduce there
  // first (rewrite/search/repair.cpp).
  std::vector<DistRef> sumOrigins;
  // The first unmatched value is held by a D value, in another layout or by
  // another factor than required (a likely bug rather than a missing schema).
  bool layoutMismatch = false;
  // That reading names the fault itself (a micro-batch's terms missing or
  // twice, partial sums used as whole, an output held otherwise), not only
  // the D value nearest the outputs that differs (a scale) or where
  // folding stopped.
  bool faultNamed = false;
  // The S value where the failure first shows, when found (else the first
  // unmatched one): the value of the D op that uses partial sums as if
  // whole, computed from whole values.
  std::string failedAt;
  // S values some D value holds, as S computes them, in a layout over the
  // group: where the per-rank engine found no relation for one of these,
  // the gap is its own. The S value of the first D op with no layout
  // (stuckText: that op and its operands' layouts), when S has that op.
  std::set<std::string> held;
  std::string stuckAt, stuckText;
  // Folding from templates could not decide (an input relation it does not
  // read as a layout): fold again with the per-rank relations.
  bool needsRanks = false;
};

FoldOutcome verifyFolded(const FoldInput& in);

}  // namespace sp::rewrite

#pragma once
// `shardproof codegen`: verified per-rank plans. Codegen is untrusted: it
// emits plans only for a D that verifies against S, and then checks its own
// output the way a stranger's plans would be checked: each plan printed as
// text and JSON and parsed back, the plans checked across ranks
// (checkPlans: the one collective order, communicators, send/recv pairs, a
// hang refused naming the steps and ranks), and the program read back from
// them verified against S again.
#include <optional>
#include <vector>

#include "codegen/plan.h"
#include "rewrite/verify/verify.h"

namespace sp::codegen {

struct CodegenOptions {
  rewrite::VerifyOptions verify;
  ir::Bindings bindings;  // values of symbolic dims; unbound ones get 4
};

struct CodegenResult {
  rewrite::VerifyReport report;                    // D against S
  std::optional<rewrite::VerifyReport> readBack;   // the plans read back, against S
  std::vector<Plan> plans;                         // empty unless both are verified
};

// Errors: bad input (as verify), or plans that fail their own checks
// (`codegen-self-check`, naming what failed; a bug of codegen).
Result<CodegenResult> generatePlans(const ir::Graph& seq, const ir::Program& dist,
                                    const rewrite::RelationFile& relations, const CodegenOptions& opts);

// Text and JSON round trip and checkPlans of `plans`, as written to a
// directory ("r0.plan", ...): the plans as parsed back and their program.
struct ReadBack {
  std::vector<Plan> plans;
  ir::Program program;
};
Result<ReadBack> readBackPlans(const std::vector<Plan>& plans);

}  // namespace sp::codegen

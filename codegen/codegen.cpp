// Verify, lower, then check the emitted plans (codegen.h).
#include "codegen/codegen.h"

#include "codegen/lower.h"

namespace sp::codegen {

namespace {

Error selfCheck(const Error& e, const std::string& what) {
  return makeError("codegen-self-check", "generated plans fail " + what + ": " + e.str());
}

}  // namespace

Result<ReadBack> readBackPlans(const std::vector<Plan>& plans) {
  ReadBack out;
  std::vector<Plan>& back = out.plans;
  for (size_t r = 0; r < plans.size(); ++r) {
    std::string file = "r" + std::to_string(r) + ".plan";
    std::string text = printPlanText(plans[r]);
    SP_ASSIGN(Plan p, parsePlanText(text, file));
    std::string json = printPlanJson(plans[r]);
    SP_ASSIGN(Plan j, parsePlanJson(json, file + ".json"));
    j.file = file;
    // Names that are not UTF-8 print as U+FFFD in JSON (docs/plan.md).
    bool replaced = json.find("\xEF\xBF\xBD") != std::string::npos;
    if (!replaced && printPlanText(j) != text)
      return makeError("plan-round-trip", "the JSON form of the plan reads back differently", file);
    for (PlanBuffer& b : p.buffers)
      if (auto src = plans[r].findBuffer(b.name)) b.data = plans[r].buffers[size_t(*src)].data;
    back.push_back(std::move(p));
  }
  SP_ASSIGN(out.program, checkPlans(back));
  return out;
}

Result<CodegenResult> generatePlans(const ir::Graph& seq, const ir::Program& dist,
                                    const rewrite::RelationFile& relations, const CodegenOptions& opts) {
  CodegenResult out;
  SP_ASSIGN(out.report, rewrite::verify(seq, dist, relations, opts.verify));
  if (out.report.verdict != rewrite::Verdict::Verified) return out;
  auto plans = lowerProgram(dist, bindProgramSymbols(dist, opts.bindings));
  if (!plans) return plans.error();
  auto back = readBackPlans(*plans);
  if (!back) return selfCheck(back.error(), "their checks");
  SP_ASSIGN(rewrite::VerifyReport again, rewrite::verify(seq, back->program, relations, opts.verify));
  out.readBack = std::move(again);
  if (out.readBack->verdict != rewrite::Verdict::Verified) return out;
  out.plans = std::move(back->plans);
  return out;
}

}  // namespace sp::codegen

// Plan text form (codegen/plan_text.cpp): any input is a plan or an error;
// a plan prints to text that parses back to the same text, its JSON form
// reads back to the same plan, and checkPlans / toProgram on it (one rank
// of a world of one) return rather than crash.
#include "codegen/plan.h"
#include "fuzz/fuzz_input.h"

#include <nlohmann/json.hpp>

static bool validUtf8(const std::string& s) {
  try {
    (void)nlohmann::json(s).dump();
    return true;
  } catch (const nlohmann::json::exception&) {
    return false;
  }
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto p = sp::codegen::parsePlanText(sp::fuzz::inputText(data, size), "fuzz.plan");
  if (!p) return 0;
  std::string printed = sp::codegen::printPlanText(*p);
  auto again = sp::codegen::parsePlanText(printed, "fuzz.plan");
  if (!again) sp::fuzz::fail("printed plan does not parse", again.error().str() + "\n" + printed);
  if (sp::codegen::printPlanText(*again) != printed) sp::fuzz::fail("print(parse(print(p))) != print(p)", printed);
  auto json = sp::codegen::parsePlanJson(sp::codegen::printPlanJson(*p), "fuzz.plan");
  if (!json) sp::fuzz::fail("JSON form does not parse", json.error().str() + "\n" + printed);
  // JSON strings are UTF-8: a plan with other bytes in its names reads back
  // with U+FFFD in their place (docs/plan.md), so only UTF-8 plans compare.
  if (validUtf8(printed) && sp::codegen::printPlanText(*json) != printed)
    sp::fuzz::fail("JSON form reads back differently", printed);
  if (p->world == 1) (void)sp::codegen::checkPlans({*p});
  return 0;
}

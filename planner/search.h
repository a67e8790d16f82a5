#pragma once
// The layout search: enumerate TP, PP (+ virtual stages, split), CP, EP (+
// ETP), DP, micro-batch, recompute and distributed optimizer; prune by the
// rules; fit memory; rank by predicted step time.
#include <map>
#include <string>
#include <vector>

#include "planner/cost.h"
#include "planner/rules.h"

namespace sp::planner {

struct PlanRequest {
  ModelConfig model;
  GpuSpec gpu;
  Job job;
  FixedChoices fix;
  int top = 5;
};

struct Plan {
  Layout layout;
  Estimate estimate;
};

struct RuleTally {
  int64_t count = 0;
  std::string example;  // the first message under this rule
};

struct PlanResult {
  std::vector<Plan> plans;  // the best plan of each distinct (tp, pp, cp, ep, dp), best first, at most `top`
  std::map<std::string, RuleTally> ruledOut;  // rule id -> candidates it ruled out
  int64_t candidates = 0, feasible = 0, layouts = 0;
  double seconds = 0;
};

// Errors: "plan-input" (non-positive sizes).
Result<PlanResult> searchPlans(const PlanRequest& req);

}  // namespace sp::planner

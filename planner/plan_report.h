#pragma once
// `shardproof plan` output: text for people, JSON
// {"plans": [{"tp", "pp", "vpp", "cp", "ep", "dp", "micro_batch", "recompute",
// "distributed_optimizer", "memory_gib_per_gpu", "step_seconds",
// "tflops_per_gpu", "mfu"}]} best first; and the summary of what ruled
// layouts out when none fits.
#include <string>

#include "planner/search.h"

namespace sp::planner {

std::string planText(const PlanRequest& req, const PlanResult& res);
std::string planJson(const PlanResult& res);
// "no layout fits ...": one line per rule, most frequent first.
std::string ruledOutText(const PlanResult& res);

}  // namespace sp::planner

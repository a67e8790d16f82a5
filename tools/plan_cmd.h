#pragma once
// `plan` and `check-launch`: thin glue over sp_planner (planner/).
#include <string>

namespace sp::tools {

struct PlanArgs {
  std::string model, gpu, fix, gpuFile;
  long long gpus = 0, seq = 0, globalBatch = 0;
  int top = 5;
  std::string format = "text";  // text | json
};
// Exit codes: 0 plans, 1 no layout fits, 3 bad input.
int cmdPlan(const PlanArgs& a);

struct CheckLaunchArgs {
  std::string model, gpu, megatronArgs, plan, gpuFile;
  long long gpus = 0;
  std::string format = "text";  // text | json | junit
};
// Exit codes: 0 no rule broken, 1 a rule broken, 3 bad input.
int cmdCheckLaunch(const CheckLaunchArgs& a);

}  // namespace sp::tools

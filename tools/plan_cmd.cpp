#include "tools/plan_cmd.h"

#include <cstdio>
#include <fstream>
#include <sstream>

#include "planner/launch.h"
#include "planner/plan_report.h"
#include "planner/search.h"
#include "tools/commands.h"

namespace sp::tools {

namespace {

int fail(const Error& e) {
  std::fprintf(stderr, "error: %s\n", e.str().c_str());
  return kExitBadInput;
}

}  // namespace

int cmdPlan(const PlanArgs& a) {
  planner::PlanRequest req;
  auto model = planner::loadModelConfig(a.model);
  if (!model) return fail(model.error());
  req.model = *model;
  auto gpu = planner::findGpu(a.gpu, a.gpuFile.empty() ? planner::defaultGpuFile() : a.gpuFile);
  if (!gpu) return fail(gpu.error());
  req.gpu = *gpu;
  if (a.gpus <= 0) return fail(makeError("plan-input", "--gpus must be positive"));
  if (a.seq <= 0) return fail(makeError("plan-input", "--seq must be positive"));
  if (a.globalBatch <= 0) return fail(makeError("plan-input", "--global-batch must be positive"));
  if (a.top <= 0) return fail(makeError("plan-input", "--top must be positive"));
  req.job = planner::Job{a.gpus, a.seq, a.globalBatch};
  auto fix = planner::parseFix(a.fix);
  if (!fix) return fail(fix.error());
  req.fix = *fix;
  req.top = a.top;
  auto res = planner::searchPlans(req);
  if (!res) return fail(res.error());
  if (a.format == "json") std::fputs(planner::planJson(*res).c_str(), stdout);
  else std::fputs(planner::planText(req, *res).c_str(), stdout);
  if (res->plans.empty()) {
    if (a.format == "json") std::fputs(planner::ruledOutText(*res).c_str(), stderr);
    return 1;
  }
  return kExitOk;
}

int cmdCheckLaunch(const CheckLaunchArgs& a) {
  auto model = planner::loadModelConfig(a.model);
  if (!model) return fail(model.error());
  auto gpu = planner::findGpu(a.gpu, a.gpuFile.empty() ? planner::defaultGpuFile() : a.gpuFile);
  if (!gpu) return fail(gpu.error());
  if (a.megatronArgs.empty() == a.plan.empty())
    return fail(makeError("args-parse", "give one of --megatron-args FILE or --plan k=v,..."));
  Result<planner::MegatronArgs> args = makeError("args-parse", "");
  if (!a.megatronArgs.empty()) {
    std::ifstream in(a.megatronArgs, std::ios::binary);
    if (!in) return fail(makeError("args-read", "cannot read the arguments file", a.megatronArgs));
    std::stringstream ss;
    ss << in.rdbuf();
    args = planner::parseMegatronArgs(ss.str(), a.megatronArgs);
  } else {
    args = planner::parseLaunchPlan(a.plan);
  }
  if (!args) return fail(args.error());
  auto rep = planner::checkLaunch(*model, *gpu, a.gpus, *args);
  if (!rep) return fail(rep.error());
  if (a.format == "json") std::fputs(planner::launchJson(*rep).c_str(), stdout);
  else if (a.format == "junit") std::fputs(planner::launchJUnit(*rep).c_str(), stdout);
  else std::fputs(planner::launchText(*rep).c_str(), stdout);
  return rep->broken() ? 1 : kExitOk;
}

}  // namespace sp::tools

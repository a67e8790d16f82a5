#pragma once
// `check-launch`: read Megatron-LM arguments as they appear on a launch
// command line (or a k=v plan), apply Megatron's own argument validation and
// what it misses (layers silently dropped, vocab padding, too few
// micro-batches, memory on the heaviest stage), and predict the step time.
#include <map>
#include <string>
#include <vector>

#include "planner/cost.h"
#include "planner/rules.h"

namespace sp::planner {

// The Megatron arguments that matter here, as given (0 / unset: Megatron's default).
struct MegatronArgs {
  std::map<std::string, std::string> values;  // "--tensor-model-parallel-size" -> "8"; flags -> ""
  std::vector<std::string> ignored;           // arguments this checker does not read
};

// Tokenizes a launch command line or argument file: backslash-newline
// continuations, '#' comments, quotes, "--key=value"; everything before the
// first "--" token (torchrun ... pretrain_gpt.py) is skipped. Error id
// "args-parse".
Result<MegatronArgs> parseMegatronArgs(const std::string& text, const std::string& where);
// "tp=8,pp=16,vpp=2,cp=1,ep=1,etp=1,mb=1,gbs=2048,seq=8192,sp=1,recompute=full,distopt=1,split=even".
Result<MegatronArgs> parseLaunchPlan(const std::string& text);

struct LaunchReport {
  std::vector<std::string> checked;  // rule ids evaluated, in order
  std::vector<Finding> findings;
  Layout layout;
  Job job;
  bool predicted = false;
  Estimate estimate;
  bool broken() const;
};

// Errors (bad input): "args-value" (not an integer, missing --seq-length).
Result<LaunchReport> checkLaunch(const ModelConfig& model, const GpuSpec& gpu, int64_t gpus,
                                 const MegatronArgs& args);

std::string launchText(const LaunchReport& r);
std::string launchJson(const LaunchReport& r);
std::string launchJUnit(const LaunchReport& r);

}  // namespace sp::planner

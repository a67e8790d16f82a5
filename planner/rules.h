#pragma once
// The divisibility and feasibility rules of a layout, each with a stable id
// and a message with its values. Megatron-LM's own argument validation
// (megatron = true) and what it misses. Shared by `plan` (which prunes on the
// first broken rule) and `check-launch` (which reports them all).
#include <string>
#include <vector>

#include "planner/layout.h"
#include "planner/model_config.h"

namespace sp::planner {

enum class Severity { Error, Warning, Info };
const char* severityName(Severity s);

struct Finding {
  std::string id;
  Severity severity = Severity::Error;
  bool megatron = false;  // Megatron-LM's own validation applies this rule
  std::string message;
};

// Structural rules (no memory or time): world, heads and groups vs TP, seq
// vs CP, experts vs EP, expert side vs ETP*EP*PP, global batch vs
// micro-batch*DP, layers vs PP (split) and virtual stages, micro-batches vs PP.
// `all` false: stop at the first error.
std::vector<Finding> checkStructure(const ModelConfig& m, const Layout& l, const Job& job, bool all);

// Whether the split is valid for pp * vpp.
bool splitDivides(const ModelConfig& m, PipeSplit split, int64_t pp, int64_t vpp);
// The uneven split the planner uses: middle stages k = ceil(layers / pp),
// first and last share the rest (first gets the larger half), each in
// 1..k. False when none exists (pp <= 2, or the rest is out of range).
bool unevenSplit(int64_t layers, int64_t pp, int64_t& first, int64_t& last);

}  // namespace sp::planner

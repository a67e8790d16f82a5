#pragma once
// The reference executor's CPU backend: runs per-rank plans (codegen/plan.h)
// with every rank in this process. Each rank owns one arena (the plan's
// bytes) and one thread per stream; a step runs when its stream reaches it,
// a wait blocks its stream until the other stream has finished what was
// issued before it; collectives meet on in-memory communicators keyed by
// their member list (as ir/collective_order matches them), sends are
// buffered FIFO per (src, dst, tag) and recvs block. Kernels are the
// interpreter's (ir/kernels_*), run on views of the arena; collectives are
// ir/collectives (member order), so f32 results equal the interpreter's
// bit for bit. Builds without CUDA; the CUDA backend (SHARDPROOF_CUDA) is
// separate.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "codegen/plan.h"
#include "ir/interpreter.h"

namespace sp::cuda_ref {

struct ExecOptions {
  uint64_t seed = 0;  // inputs and params neither given nor carried by the plan
};

struct ExecResult {
  std::vector<ir::TensorMap> outputs;  // per rank, the graph outputs by name
  double seconds = 0;                  // the run, arenas filled to outputs copied
  // Kernel steps run on the host for want of a device kernel (CUDA backend):
  // op name -> steps, over every rank, one run. Always empty on the CPU.
  std::map<std::string, int64_t> hostFallbacks;
};

// `plans` must have passed codegen::checkPlans, which returned `program`
// (inputs are drawn from its graphs exactly as the interpreter draws them).
// given[r] holds rank r's inputs (may be empty: all drawn). Errors name the
// rank and the plan step; a failure on one rank stops every rank.
Result<ExecResult> runPlansCpu(const std::vector<codegen::Plan>& plans, const ir::Program& program,
                               const std::vector<ir::TensorMap>& given, const ExecOptions& opts = {});

}  // namespace sp::cuda_ref

#pragma once
// `plan` and `check-launch`: thin glue over sp_planner (planner/).
#include <string>

namespace sp::tools {

struct PlanArgs {
  std::string model, gpu, fix, gpuFile;
  long long gpus = 0, seq = 0, globalBatch = 0;
  int top = 5;
  std::string format = "text";  // text | json
  // --emit DIR: the best layout's program (one pipeline stage's layers, at
  // --emit-layers and --emit-seq, sizes a machine can run) written by
  // parallelize to DIR/program and through codegen (verified first) to
  // DIR/plan, for `exec DIR/plan`.
  std::string emit;
  long long emitLayers = 1, emitSeq = 0;  // emitSeq 0: min(--seq, 256)
};
// Exit codes: 0 plans (and, with --emit, plans written), 1 no layout fits
// (or the emitted program not verified), 3 bad input.
int cmdPlan(const PlanArgs& a);

struct CheckLaunchArgs {
  std::string model, gpu, megatronArgs, plan, gpuFile;
  long long gpus = 0;
  std::string format = "text";  // text | json | junit
};
// Exit codes: 0 no rule broken, 1 a rule broken, 3 bad input.
int cmdCheckLaunch(const CheckLaunchArgs& a);

struct ParallelizeArgs {
  std::string model, fix, outDir;
  std::string sequenceParallel = "auto";  // auto (on when tp > 1, Megatron's recommendation) | on | off
  std::string blocks = "full";            // full (attention + MLP) | mlp
  std::string cpChunks = "contiguous";    // context parallel: contiguous | balanced (Megatron's causal load balance)
  std::string schedule = "1f1b";          // pipeline micro-batches with the backward: 1f1b | gpipe
  long long seq = 0, batch = 1, layers = 0, microBatches = 1;
  bool verify = false;
  bool backward = false;        // the training step (forward + backward)
  std::string format = "text";  // of the verify report
};
// Writes OUT/seq.sp, OUT/dist.sp, OUT/relations.rel; with --verify, then
// verifies them (verify's exit codes). Exit 3 on bad input or a layout that
// is not generated (the message says why).
int cmdParallelize(const ParallelizeArgs& a);

}  // namespace sp::tools

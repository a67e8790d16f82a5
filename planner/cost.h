#pragma once
// The planner's memory and step-time model (docs/planner.md states every
// assumption). Untrusted: it ranks layouts; it proves nothing.
#include "planner/gpu.h"
#include "planner/layout.h"
#include "planner/model_config.h"

namespace sp::planner {

// Fixed assumptions, in one place (docs/planner.md).
inline constexpr double kReserveGib = 3.0;         // CUDA context, NCCL buffers, cuBLAS/TE workspaces
inline constexpr double kFragmentation = 0.05;     // allocator fragmentation on top of tensors
inline constexpr double kNvlinkLatencyS = 5e-6;    // per ring step
inline constexpr double kIbLatencyS = 10e-6;       // per ring step
inline constexpr double kFlashBackwardRatio = 2.5; // flash attention backward / forward FLOPs
inline constexpr double kGradBucketParams = 40e6;  // Megatron's DDP bucket: the last one is exposed

struct MemoryBreakdown {
  double weights = 0, grads = 0, optimizer = 0, activations = 0, logits = 0;  // bytes
  double totalGib = 0;  // (sum) * (1 + fragmentation) + reserve, in GiB
};

struct TimeBreakdown {
  double compute = 0;  // per micro-batch on the slowest stage: GEMMs, attention, memory-bound ops
  double tpComm = 0, cpComm = 0, epComm = 0;  // exposed, per micro-batch on the slowest stage
  double bubble = 0, ppComm = 0, dpComm = 0, optimizer = 0;  // per step
};

struct Estimate {
  int64_t microBatches = 0;
  int heaviestStage = 0;  // by memory
  MemoryBreakdown memory;  // of the heaviest stage
  bool fits = false;
  TimeBreakdown time;
  double stepSeconds = 0, tflopsPerGpu = 0, mfu = 0;
};

// Layers on pipeline stage `stage` (first index, count).
struct StageLayers {
  int64_t first = 0, count = 0;
  bool embedding = false, loss = false;
};
StageLayers stageLayers(const ModelConfig& m, const Layout& l, int64_t stage);

// Model FLOPs of one training step (Megatron-LM's count).
double stepModelFlops(const ModelCounts& mc, const Job& job);

// Assumes the layout passed the divisibility rules (rules.h).
Estimate estimate(const ModelCounts& mc, const GpuSpec& gpu, const Layout& l, const Job& job);

}  // namespace sp::planner

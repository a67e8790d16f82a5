#pragma once
// A parallel layout (Megatron-LM's degrees and options) and the training job
// it runs. Typed, never strings; parseFix reads "tp=8,pp=16,recompute=full".
#include <cstdint>
#include <optional>
#include <string>

#include "ir/support.h"

namespace sp::planner {

enum class Recompute { None, Selective, Full };
const char* recomputeName(Recompute r);

// How layers are split over pipeline stages: evenly, or with the embedding
// and the loss each taking one layer's slot on the first and last stage
// (Megatron's --account-for-embedding-in-pipeline-split
// --account-for-loss-in-pipeline-split; Llama 3's 126 layers on 16 stages).
// Or unevenly, Megatron's --decoder-first-pipeline-num-layers F
// --decoder-last-pipeline-num-layers G with the middle stages even
// (DeepSeek-V3's 61 layers on 16 stages); no virtual stages then.
enum class PipeSplit { Even, EmbeddingLoss, Uneven };
const char* pipeSplitName(PipeSplit s);

struct Layout {
  int64_t tp = 1, pp = 1, vpp = 1, cp = 1, ep = 1, etp = 1, dp = 1, microBatch = 1;
  Recompute recompute = Recompute::None;
  bool distributedOptimizer = true;
  bool sequenceParallel = true;  // effective only when tp > 1
  PipeSplit split = PipeSplit::Even;
  int64_t firstLayers = 0, lastLayers = 0;  // PipeSplit::Uneven only
  int64_t world() const { return tp * pp * cp * dp; }
};

struct Job {
  int64_t gpus = 0, seq = 0, globalBatch = 0;
};

// Values pinned by --fix; unset ones are searched.
struct FixedChoices {
  std::optional<int64_t> tp, pp, vpp, cp, ep, etp, dp, microBatch;
  std::optional<Recompute> recompute;
  std::optional<bool> distributedOptimizer;
  std::optional<PipeSplit> split;
};

// "tp=8,pp=16,cp=1,vpp=4,ep=1,etp=1,dp=64,mb=1,recompute=full,distopt=1,split=even".
// Keys: tp pp vpp cp ep etp dp mb|micro_batch recompute
// distopt|distributed_optimizer split. Error id "fix-parse".
Result<FixedChoices> parseFix(const std::string& text);

}  // namespace sp::planner

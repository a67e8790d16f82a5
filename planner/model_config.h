#pragma once
// A transformer model as the planner sees it: the shape numbers of a Hugging
// Face config.json (gpt2, llama, mixtral, qwen2_moe, deepseek_v3) and the
// counts derived from them (parameters, FLOPs per token, activation bytes per
// token). docs/planner.md states how each count is made.
#include <cstdint>
#include <string>

#include "ir/support.h"

namespace sp::planner {

struct ModelConfig {
  std::string name;       // file stem, e.g. "llama3-405b"
  std::string modelType;  // HF model_type
  int64_t hidden = 0, layers = 0, heads = 0, kvHeads = 0, vocab = 0;
  int64_t headDim = 0;    // query/key dim per head (MLA: nope + rope)
  int64_t vHeadDim = 0;   // value dim per head
  int64_t ffn = 0;        // dense MLP intermediate size
  int64_t positions = 0;  // learned position embeddings (gpt2), else 0
  bool gated = true;      // SwiGLU (3 matrices) vs GELU (2)
  bool tiedEmbeddings = false;
  bool biases = false;    // gpt2 linear biases, qwen qkv bias (parameters only)
  bool dropout = false;   // gpt2: dropout masks are stored activations
  // Multi-head latent attention (deepseek_v3); 0 when absent.
  int64_t qLoraRank = 0, kvLoraRank = 0, qkNopeDim = 0, qkRopeDim = 0;
  // Mixture of experts; experts == 0 for dense models.
  int64_t experts = 0, topK = 0, moeFfn = 0, sharedFfn = 0;
  int64_t denseLayers = 0;  // leading dense layers (deepseek first_k_dense_replace)
  // Routing: top-k of softmax (sigmoid: deepseek_v3's scoring_func) scores,
  // renormalized over the k (norm_topk_prob), times routed_scaling_factor;
  // deepseek_v3 selects on the scores plus a per-expert bias
  // (e_score_correction_bias); qwen2_moe gates its shared expert by a sigmoid.
  bool normTopK = true, sigmoidRouter = false, selectionBias = false, sharedGate = false;
  double routedScale = 1.0;

  bool mla() const { return kvLoraRank > 0; }
  bool moe() const { return experts > 0; }
  int64_t moeLayers() const { return moe() ? layers - denseLayers : 0; }
};

// Counts per layer kind and for the whole model, in elements (parameters) or
// FLOPs per token. "Matmul weights" are the weight matrices a token passes
// through (active experts only); biases and norms are parameters but no FLOPs.
struct LayerCounts {
  double params = 0;         // all parameters of one layer
  double expertParams = 0;   // of which routed-expert parameters
  double activeMatmul = 0;   // matmul weight elements a token multiplies by
  double attnCore = 0;       // causal attention FLOPs per token per (seq) token, forward: s * this
  double actBytes = 0;       // bytes per token stored for backward (no recompute, no parallelism)
  double expertActBytes = 0; // of which in routed experts
};

struct ModelCounts {
  LayerCounts dense, moe;    // a dense layer and (if any) an MoE layer
  double embeddingParams = 0, outputParams = 0, finalNormParams = 0;
  double totalParams() const;
  double activeParams() const;
  // Training FLOPs per token at sequence length `seq`, as Megatron-LM counts
  // them: 6 per matmul weight (forward 2, backward 4), causal attention
  // halved (3 * s * heads * (dqk + dv)), the logit layer 6 * V * h.
  double flopsPerToken(int64_t seq) const;
  const ModelConfig* cfg = nullptr;
};

// Parses a Hugging Face config.json. Errors: "config-read", "config-parse",
// "config-unsupported", "config-missing".
Result<ModelConfig> parseModelConfig(const std::string& jsonText, const std::string& name);
Result<ModelConfig> loadModelConfig(const std::string& path);

ModelCounts countModel(const ModelConfig& c);

}  // namespace sp::planner

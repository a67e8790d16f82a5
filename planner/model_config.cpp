#include "planner/model_config.h"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace sp::planner {

namespace {

using nlohmann::json;

struct Reader {
  const json& j;
  std::string where;
  std::string missing;  // first required key absent

  int64_t get(const char* key, int64_t dflt = -1) {
    auto it = j.find(key);
    if (it == j.end() || it->is_null()) {
      if (dflt < 0 && missing.empty()) missing = key;
      return dflt < 0 ? 0 : dflt;
    }
    if (!it->is_number_integer() || it->get<int64_t>() < 0) {
      if (missing.empty()) missing = std::string(key) + " (not a non-negative integer)";
      return 0;
    }
    return it->get<int64_t>();
  }
  bool flag(const char* key, bool dflt) {
    auto it = j.find(key);
    return it != j.end() && it->is_boolean() ? it->get<bool>() : dflt;
  }
};

}  // namespace

Result<ModelConfig> parseModelConfig(const std::string& text, const std::string& name) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object())
    return makeError("config-parse", "not a JSON object", name);
  ModelConfig c;
  c.name = name;
  c.modelType = j.value("model_type", std::string());
  Reader r{j, name, {}};
  const std::string& t = c.modelType;
  if (t == "gpt2") {
    c.hidden = r.get("n_embd");
    c.layers = r.get("n_layer");
    c.heads = r.get("n_head");
    c.kvHeads = c.heads;
    c.vocab = r.get("vocab_size");
    c.positions = r.get("n_positions", 1024);
    c.ffn = r.get("n_inner", 0);
    if (c.ffn == 0) c.ffn = 4 * c.hidden;
    c.gated = false;
    c.tiedEmbeddings = true;
    c.biases = true;
    c.dropout = true;
  } else if (t == "llama" || t == "mistral" || t == "mixtral" || t == "qwen2" || t == "qwen2_moe" ||
             t == "deepseek_v3") {
    c.hidden = r.get("hidden_size");
    c.layers = r.get("num_hidden_layers");
    c.heads = r.get("num_attention_heads");
    c.kvHeads = r.get("num_key_value_heads", c.heads);
    c.vocab = r.get("vocab_size");
    c.ffn = r.get("intermediate_size");
    c.tiedEmbeddings = r.flag("tie_word_embeddings", false);
    c.biases = t == "qwen2" || t == "qwen2_moe";
    if (t == "mixtral") {
      c.experts = r.get("num_local_experts");
      c.topK = r.get("num_experts_per_tok");
      c.moeFfn = c.ffn;
      c.normTopK = true;  // softmax over the top-k logits: the top-k probabilities renormalized
    } else if (t == "qwen2_moe") {
      c.experts = r.get("num_experts");
      c.topK = r.get("num_experts_per_tok");
      c.moeFfn = r.get("moe_intermediate_size");
      c.sharedFfn = r.get("shared_expert_intermediate_size", 0);
      c.normTopK = r.flag("norm_topk_prob", false);
      c.sharedGate = c.sharedFfn > 0;
      // decoder_sparse_step 1 and no mlp_only_layers: every layer is MoE.
      int64_t step = r.get("decoder_sparse_step", 1);
      auto mlpOnly = j.find("mlp_only_layers");
      if (step != 1 || (mlpOnly != j.end() && mlpOnly->is_array() && !mlpOnly->empty()))
        return makeError("config-unsupported",
                         "qwen2_moe: decoder_sparse_step other than 1 or mlp_only_layers are not modeled",
                         name);
    } else if (t == "deepseek_v3") {
      c.experts = r.get("n_routed_experts");
      c.topK = r.get("num_experts_per_tok");
      c.moeFfn = r.get("moe_intermediate_size");
      c.sharedFfn = r.get("n_shared_experts", 0) * c.moeFfn;
      c.denseLayers = r.get("first_k_dense_replace", 0);
      c.normTopK = r.flag("norm_topk_prob", true);
      c.sigmoidRouter = j.value("scoring_func", std::string("sigmoid")) == "sigmoid";
      c.selectionBias = j.value("topk_method", std::string("noaux_tc")) == "noaux_tc";
      if (auto f = j.find("routed_scaling_factor"); f != j.end() && f->is_number()) c.routedScale = f->get<double>();
      else c.routedScale = 2.5;
      c.qLoraRank = r.get("q_lora_rank", 0);
      c.kvLoraRank = r.get("kv_lora_rank");
      c.qkNopeDim = r.get("qk_nope_head_dim");
      c.qkRopeDim = r.get("qk_rope_head_dim");
      c.vHeadDim = r.get("v_head_dim");
      c.headDim = c.qkNopeDim + c.qkRopeDim;
    }
    if (!c.mla()) {
      c.headDim = r.get("head_dim", 0);
      if (c.headDim == 0 && c.heads > 0) c.headDim = c.hidden / c.heads;
      c.vHeadDim = c.headDim;
    }
  } else {
    return makeError("config-unsupported",
                     "model_type '" + t +
                         "' is not supported (gpt2, llama, mistral, mixtral, qwen2, qwen2_moe, deepseek_v3)",
                     name);
  }
  if (t == "gpt2") {
    c.headDim = c.heads > 0 ? c.hidden / c.heads : 0;
    c.vHeadDim = c.headDim;
  }
  if (!r.missing.empty()) return makeError("config-missing", "missing or bad key: " + r.missing, name);
  if (c.hidden <= 0 || c.layers <= 0 || c.heads <= 0 || c.vocab <= 0 || c.kvHeads <= 0)
    return makeError("config-missing", "hidden size, layers, heads, KV heads and vocab must be positive",
                     name);
  if (c.heads % c.kvHeads != 0)
    return makeError("config-parse",
                     "num_attention_heads " + std::to_string(c.heads) + " is not a multiple of num_key_value_heads " +
                         std::to_string(c.kvHeads),
                     name);
  if (c.moe() && (c.topK <= 0 || c.topK > c.experts || c.moeFfn <= 0))
    return makeError("config-parse", "experts: top-k must be in 1..experts and the expert ffn positive", name);
  if (c.denseLayers > c.layers) return makeError("config-parse", "first_k_dense_replace exceeds the layers", name);
  return c;
}

Result<ModelConfig> loadModelConfig(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return makeError("config-read", "cannot read the model config", path);
  std::stringstream ss;
  ss << in.rdbuf();
  std::filesystem::path p(path);
  std::string stem = p.stem().string();
  if (stem == "config") stem = p.parent_path().filename().string();
  SP_ASSIGN(ModelConfig c, parseModelConfig(ss.str(), path));
  c.name = stem;
  return c;
}

namespace {

// One layer's attention block: parameters, matmul weights, attention core
// and stored bytes per token.
void addAttention(const ModelConfig& c, LayerCounts& l) {
  double h = c.hidden, a = c.heads, g = c.kvHeads, d = c.headDim, dv = c.vHeadDim;
  double norm = c.dropout ? 2 * h : h;  // layernorm with bias (gpt2)
  double w = 0, bytes = 0;
  if (c.mla()) {
    double q = c.qLoraRank, kv = c.kvLoraRank, rope = c.qkRopeDim, nope = c.qkNopeDim;
    double qw = q > 0 ? h * q + q * a * (nope + rope) : h * a * (nope + rope);
    double kvw = h * (kv + rope) + kv * a * (nope + dv);
    w = qw + kvw + a * dv * h;
    l.params += w + norm + (q > 0 ? q : 0) + kv;  // latent norms
    // norm in, norm out, latents and their norm outputs, Q K V after the
    // up-projections, attention output.
    bytes = 2 * h + 2 * h + (q > 0 ? 4 * q : 0) + 2 * (kv + rope) + 2 * kv +
            2 * a * (d + d + dv) + 2 * a * dv;
  } else {
    w = h * a * d + 2 * h * g * d + a * d * h;
    l.params += w + norm + (c.biases ? a * d + 2 * g * d + (c.dropout ? h : 0) : 0);
    bytes = 2 * h + 2 * h + 2 * (a * d + 2 * g * d) + 2 * a * d;
  }
  if (c.dropout) bytes += h;  // residual dropout mask (1 byte)
  l.activeMatmul += w;
  l.attnCore = 3 * a * (d + dv);  // training, causal halved: x s
  l.actBytes += bytes;
}

void addDenseMlp(const ModelConfig& c, LayerCounts& l) {
  double h = c.hidden, f = c.ffn;
  double norm = c.dropout ? 2 * h : h;
  double w = (c.gated ? 3 : 2) * h * f;
  l.params += w + norm + (c.biases && c.dropout ? f + h : 0);
  l.activeMatmul += w;
  // norm in, norm out; gated: gate, up, act out; gelu: fc1 out, gelu out.
  l.actBytes += 4 * h + (c.gated ? 6 * f : 4 * f) + (c.dropout ? h : 0);
}

void addMoeMlp(const ModelConfig& c, LayerCounts& l) {
  double h = c.hidden, e = c.experts, k = c.topK, f = c.moeFfn, s = c.sharedFfn;
  double expert = e * 3 * h * f;
  double shared = 3 * h * s;
  double router = h * e;
  l.params += expert + shared + router + h + (c.modelType == "qwen2_moe" && s > 0 ? h : 0);
  l.expertParams += expert;
  l.activeMatmul += router + k * 3 * h * f + shared;
  double expertBytes = k * (2 * h + 6 * f + 2 * h);  // permuted input, gate/up/act, output
  l.actBytes += 4 * h + 4 * e + expertBytes + 6 * s;
  l.expertActBytes += expertBytes;
}

}  // namespace

ModelCounts countModel(const ModelConfig& c) {
  ModelCounts m;
  m.cfg = &c;
  addAttention(c, m.dense);
  addDenseMlp(c, m.dense);
  if (c.moe()) {
    addAttention(c, m.moe);
    addMoeMlp(c, m.moe);
  }
  double h = c.hidden;
  m.embeddingParams = double(c.vocab) * h + double(c.positions) * h;
  m.outputParams = c.tiedEmbeddings ? 0 : double(c.vocab) * h;
  m.finalNormParams = c.dropout ? 2 * h : h;
  return m;
}

double ModelCounts::totalParams() const {
  const ModelConfig& c = *cfg;
  return double(c.layers - c.moeLayers()) * dense.params + double(c.moeLayers()) * moe.params +
         embeddingParams + outputParams + finalNormParams;
}

double ModelCounts::activeParams() const {
  const ModelConfig& c = *cfg;
  return totalParams() - double(c.moeLayers()) * (moe.expertParams - double(c.topK) * 3 * c.hidden * c.moeFfn);
}

double ModelCounts::flopsPerToken(int64_t seq) const {
  const ModelConfig& c = *cfg;
  double s = double(seq);
  double nd = double(c.layers - c.moeLayers()), nm = double(c.moeLayers());
  double layersFlops = nd * (6 * dense.activeMatmul + dense.attnCore * s) +
                       nm * (6 * moe.activeMatmul + moe.attnCore * s);
  return layersFlops + 6 * double(c.vocab) * double(c.hidden);
}

}  // namespace sp::planner

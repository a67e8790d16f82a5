// Model configs: published parameter counts and Megatron-LM's FLOP formula.
#include <gtest/gtest.h>

#include "planner/model_config.h"

namespace sp::planner {
namespace {

ModelConfig load(const std::string& name) {
  auto c = loadModelConfig(std::string(SP_SOURCE_DIR) + "/planner/configs/" + name + ".json");
  EXPECT_TRUE(c.ok()) << (c.ok() ? "" : c.error().str());
  return *c;
}

struct Published {
  const char* name;
  double total, active;  // parameters, as the model cards state them
};

TEST(PlanConfig, ParameterCountsMatchPublished) {
  for (Published p : {Published{"gpt2", 124.44e6, 124.44e6}, Published{"llama3-8b", 8.03e9, 8.03e9},
                      Published{"llama3-70b", 70.55e9, 70.55e9}, Published{"llama3-405b", 405.85e9, 405.85e9},
                      Published{"mixtral-8x7b", 46.70e9, 12.88e9}, Published{"qwen2-57b-a14b", 57.41e9, 14.25e9},
                      Published{"deepseek-v3", 671.0e9, 37.55e9}}) {
    ModelConfig c = load(p.name);
    ModelCounts m = countModel(c);
    EXPECT_NEAR(m.totalParams() / p.total, 1.0, 0.002) << p.name << " " << m.totalParams();
    EXPECT_NEAR(m.activeParams() / p.active, 1.0, 0.002) << p.name << " " << m.activeParams();
  }
}

TEST(PlanConfig, FieldsOfEachFamily) {
  ModelConfig l = load("llama3-405b");
  EXPECT_EQ(l.kvHeads, 8);
  EXPECT_EQ(l.headDim, 128);
  EXPECT_FALSE(l.tiedEmbeddings);
  ModelConfig g = load("gpt2");
  EXPECT_EQ(g.ffn, 4 * 768);
  EXPECT_TRUE(g.tiedEmbeddings);
  EXPECT_FALSE(g.gated);
  ModelConfig q = load("qwen2-57b-a14b");
  EXPECT_EQ(q.experts, 64);
  EXPECT_EQ(q.topK, 8);
  EXPECT_EQ(q.sharedFfn, 20480);
  ModelConfig d = load("deepseek-v3");
  EXPECT_TRUE(d.mla());
  EXPECT_EQ(d.headDim, 192);
  EXPECT_EQ(d.vHeadDim, 128);
  EXPECT_EQ(d.denseLayers, 3);
  EXPECT_EQ(d.moeLayers(), 58);
  EXPECT_EQ(d.sharedFfn, 2048);
}

// Megatron-LM's num_floating_point_operations for a GQA SwiGLU model:
// 12 L h^2 [(1 + g/a + s/(2h)) + 1.5 ffn/h + V/(2 L h)] per token.
TEST(PlanConfig, FlopsAreMegatronsCount) {
  ModelConfig c = load("llama3-405b");
  ModelCounts m = countModel(c);
  for (double s : {8192.0, 131072.0}) {
    double h = 16384, L = 126, a = 128, g = 8, f = 53248, V = 128256;
    double megatron = 12 * L * h * h * ((1 + g / a + s / (2 * h)) + 1.5 * f / h + V / (2 * L * h));
    EXPECT_NEAR(m.flopsPerToken(int64_t(s)) / megatron, 1.0, 1e-9) << s;
  }
}

TEST(PlanConfig, BadConfigsAreErrors) {
  auto r = parseModelConfig("{\"model_type\": \"bert\"}", "x.json");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().id, "config-unsupported");
  EXPECT_EQ(r.error().str(),
            "x.json: model_type 'bert' is not supported (gpt2, llama, mistral, mixtral, qwen2, qwen2_moe, deepseek_v3)");
  r = parseModelConfig("{\"model_type\": \"llama\", \"hidden_size\": 64}", "x.json");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().str(), "x.json: missing or bad key: num_hidden_layers");
  r = parseModelConfig("not json", "x.json");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().id, "config-parse");
  r = parseModelConfig(R"({"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2,
      "num_attention_heads": 6, "num_key_value_heads": 4, "vocab_size": 10, "intermediate_size": 8})", "x.json");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().str(), "x.json: num_attention_heads 6 is not a multiple of num_key_value_heads 4");
  EXPECT_EQ(loadModelConfig("/nonexistent/config.json").error().id, "config-read");
}

}  // namespace
}  // namespace sp::planner

// check-launch: every rule with its exact message, argument parsing, formats.
#include <gtest/gtest.h>

#include "planner/launch.h"

namespace sp::planner {
namespace {

ModelConfig load(const std::string& name) {
  return *loadModelConfig(std::string(SP_SOURCE_DIR) + "/planner/configs/" + name + ".json");
}

const char* kLlamaBase =
    "--num-layers 126 --hidden-size 16384 --num-attention-heads 128 --group-query-attention "
    "--num-query-groups 8 --seq-length 8192 --micro-batch-size 1 --sequence-parallel --use-distributed-optimizer ";

LaunchReport run(const std::string& model, int64_t gpus, const std::string& args) {
  auto a = parseMegatronArgs(args, "args");
  EXPECT_TRUE(a.ok()) << (a.ok() ? "" : a.error().str());
  auto r = checkLaunch(load(model), *findGpu("h100-sxm"), gpus, *a);
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().str());
  return *r;
}

// The message of the one finding with `id`, or "" when absent.
std::string message(const LaunchReport& r, const std::string& id) {
  std::string out;
  for (const auto& f : r.findings)
    if (f.id == id) out += (out.empty() ? "" : " | ") + std::string(severityName(f.severity)) + ": " + f.message;
  return out;
}

std::string llama(const std::string& extra) { return std::string(kLlamaBase) + extra; }

TEST(LaunchCheck, PublishedLayoutIsOk) {
  auto r = run("llama3-405b", 8192,
               llama("--tensor-model-parallel-size 8 --pipeline-model-parallel-size 16 "
                     "--num-layers-per-virtual-pipeline-stage 1 --account-for-embedding-in-pipeline-split "
                     "--account-for-loss-in-pipeline-split --global-batch-size 2048 --recompute-granularity full"));
  EXPECT_FALSE(r.broken()) << launchText(r);
  EXPECT_EQ(r.layout.vpp, 8);
  EXPECT_EQ(r.layout.dp, 64);
  ASSERT_TRUE(r.predicted);
  EXPECT_NE(message(r, "step-time").find("predicted step "), std::string::npos);
  EXPECT_EQ(message(r, "memory").rfind("info: heaviest stage 1 needs ", 0), 0u) << message(r, "memory");
}

TEST(LaunchCheck, WorldSize) {
  auto r = run("llama3-405b", 1000, llama("--tensor-model-parallel-size 8 --pipeline-model-parallel-size 16"));
  EXPECT_EQ(message(r, "world-size"), "error: world size 1000 is not divisible by tp 8 x pp 16 x cp 1 = 128");
}

TEST(LaunchCheck, ExpertWorld) {
  auto r = run("mixtral-8x7b", 48,
               "--seq-length 4096 --tensor-model-parallel-size 2 --expert-model-parallel-size 8 "
               "--expert-tensor-parallel-size 2 --pipeline-model-parallel-size 2 --sequence-parallel");
  EXPECT_EQ(message(r, "expert-world"), "error: world size 48 is not divisible by etp 2 x ep 8 x pp 2 = 32");
}

TEST(LaunchCheck, GlobalBatch) {
  auto r = run("llama3-405b", 8192,
               llama("--tensor-model-parallel-size 8 --pipeline-model-parallel-size 16 "
                     "--account-for-embedding-in-pipeline-split --account-for-loss-in-pipeline-split "
                     "--micro-batch-size 3 --global-batch-size 2048"));
  EXPECT_EQ(message(r, "global-batch"),
            "error: global batch 2048 is not divisible by micro-batch 3 x dp 64 = 192");
}

TEST(LaunchCheck, HeadsAndQueryGroups) {
  auto r = run("llama3-405b", 8192 * 3, llama("--tensor-model-parallel-size 6 --global-batch-size 4096"));
  EXPECT_EQ(message(r, "heads-tp"), "error: attention heads 128 are not divisible by tp 6");
  EXPECT_EQ(message(r, "query-groups-tp"), "error: query groups 8 are not divisible by tp 6");
  r = run("llama3-405b", 8192, llama("--tensor-model-parallel-size 16 --global-batch-size 512"));
  EXPECT_EQ(message(r, "query-groups-tp"), "error: query groups 8 are not divisible by tp 16");
  EXPECT_EQ(message(r, "heads-tp"), "");
  r = run("llama3-8b", 8, "--seq-length 8192 --num-attention-heads 30 --num-query-groups 8 --group-query-attention");
  EXPECT_EQ(message(r, "heads-query-groups"), "error: attention heads 30 are not divisible by query groups 8");
  EXPECT_EQ(message(r, "hidden-heads"), "error: hidden size 4096 is not divisible by attention heads 30");
  EXPECT_EQ(message(r, "model-mismatch"),
            "warning: --num-attention-heads 30 differs from the config's num_attention_heads 32: megatron builds 30");
}

TEST(LaunchCheck, SeqVsContextParallel) {
  auto r = run("llama3-8b", 64, "--seq-length 8200 --context-parallel-size 8 --tensor-model-parallel-size 8");
  EXPECT_EQ(message(r, "seq-cp"), "error: sequence length 8200 is not divisible by 2 x cp 8 = 16");
}

TEST(LaunchCheck, ExpertsVsExpertParallel) {
  auto r = run("mixtral-8x7b", 48,
               "--seq-length 4096 --expert-model-parallel-size 3 --expert-tensor-parallel-size 1");
  EXPECT_EQ(message(r, "experts-ep"), "error: experts 8 are not divisible by ep 3");
  r = run("llama3-8b", 16, "--seq-length 4096 --expert-model-parallel-size 2");
  EXPECT_EQ(message(r, "experts-ep"), "error: ep 2 on a model without experts");
}

TEST(LaunchCheck, LayersVsVirtualStages) {
  auto r = run("llama3-405b", 8192,
               llama("--tensor-model-parallel-size 8 --pipeline-model-parallel-size 16 "
                     "--num-layers-per-virtual-pipeline-stage 2 --global-batch-size 2048"));
  EXPECT_EQ(message(r, "layers-vpp"),
            "error: layers 126 are not divisible by pp 16, as the interleaved schedule needs");
  r = run("llama3-70b", 1024,
          "--seq-length 8192 --tensor-model-parallel-size 8 --pipeline-model-parallel-size 8 "
          "--num-layers-per-virtual-pipeline-stage 3 --global-batch-size 1024 --sequence-parallel");
  EXPECT_EQ(message(r, "layers-vpp"),
            "error: layers per pipeline stage 10 are not divisible by layers per virtual stage 3");
  r = run("llama3-70b", 1024,
          "--seq-length 8192 --tensor-model-parallel-size 8 --pipeline-model-parallel-size 8 "
          "--virtual-pipeline-model-parallel-size 4 --global-batch-size 1024 --sequence-parallel");
  EXPECT_EQ(message(r, "layers-vpp"), "error: layers per pipeline stage 10 are not divisible by vpp 4");
}

TEST(LaunchCheck, UnevenFirstAndLastStages) {
  const char* ds = "--seq-length 4096 --tensor-model-parallel-size 1 --pipeline-model-parallel-size 16 "
                   "--expert-model-parallel-size 64 --global-batch-size 15360 --use-distributed-optimizer ";
  auto r = run("deepseek-v3", 2048, std::string(ds) + "--decoder-first-pipeline-num-layers 3 "
                                                     "--decoder-last-pipeline-num-layers 2");
  EXPECT_EQ(message(r, "layers-uneven"), "");
  EXPECT_EQ(message(r, "layers-dropped"), "");
  EXPECT_EQ(r.layout.split, PipeSplit::Uneven);
  r = run("deepseek-v3", 2048, std::string(ds) + "--decoder-first-pipeline-num-layers 4 "
                                                "--decoder-last-pipeline-num-layers 2");
  EXPECT_EQ(message(r, "layers-uneven"),
            "error: layers 61 - first stage 4 - last stage 2 = 55 are not divisible by the 14 other stages");
}

TEST(LaunchCheck, InterleavedNeedsPipeline) {
  auto r = run("llama3-8b", 8, "--seq-length 8192 --virtual-pipeline-model-parallel-size 2");
  EXPECT_EQ(message(r, "interleaved-pp"), "error: the interleaved schedule needs pp > 1, not 1");
}

TEST(LaunchCheck, MicroBatchesVsPipelineInterleaved) {
  auto r = run("llama3-70b", 640,
               "--seq-length 8192 --tensor-model-parallel-size 8 --pipeline-model-parallel-size 8 "
               "--virtual-pipeline-model-parallel-size 5 --global-batch-size 120 --sequence-parallel");
  EXPECT_EQ(message(r, "microbatches-interleaved"),
            "error: micro-batches 12 are not divisible by pp 8, as the interleaved schedule needs");
}

TEST(LaunchCheck, SequenceParallelNeedsTensorParallel) {
  auto r = run("gpt2", 8, "--seq-length 1024 --sequence-parallel --global-batch-size 64");
  EXPECT_EQ(message(r, "sequence-parallel-tp"), "warning: sequence parallel needs tp > 1: megatron turns it off at tp 1");
  EXPECT_FALSE(r.broken());
}

TEST(LaunchCheck, MoeNeedsSequenceParallel) {
  auto r = run("mixtral-8x7b", 64,
               "--seq-length 4096 --tensor-model-parallel-size 2 --expert-model-parallel-size 8 "
               "--global-batch-size 256");
  EXPECT_EQ(message(r, "moe-sequence-parallel"), "error: expert parallel with tp 2 needs --sequence-parallel");
}

TEST(LaunchCheck, LayersSilentlyDropped) {
  auto r = run("llama3-405b", 8192,
               llama("--tensor-model-parallel-size 8 --pipeline-model-parallel-size 16 --global-batch-size 2048"));
  EXPECT_EQ(message(r, "layers-dropped"),
            "error: layers 126 are not divisible by pp 16: megatron-core builds 7 per stage and silently drops 14");
}

TEST(LaunchCheck, VocabPadding) {
  auto r = run("gpt2", 8, "--seq-length 1024 --tensor-model-parallel-size 2 --sequence-parallel");
  EXPECT_EQ(message(r, "vocab-tp"),
            "warning: vocab 50257 is not divisible by tp 2: megatron pads it to 50432 rows (multiple of 128 x tp 2); "
            "a checkpoint with 50257 rows must be padded before it loads");
}

TEST(LaunchCheck, FewerMicroBatchesThanStages) {
  auto r = run("llama3-70b", 640,
               "--seq-length 8192 --tensor-model-parallel-size 8 --pipeline-model-parallel-size 8 "
               "--global-batch-size 40 --sequence-parallel");
  EXPECT_EQ(message(r, "microbatches-pp"),
            "error: micro-batches 4 are fewer than pipeline stages 8: 4 stages idle in every slot, and schedules "
            "that assume at least pp in flight hang");
}

TEST(LaunchCheck, MemoryOnHeaviestStage) {
  auto r = run("llama3-405b", 8192,
               llama("--tensor-model-parallel-size 8 --pipeline-model-parallel-size 16 "
                     "--num-layers-per-virtual-pipeline-stage 1 --account-for-embedding-in-pipeline-split "
                     "--account-for-loss-in-pipeline-split --global-batch-size 2048"));
  EXPECT_EQ(message(r, "memory").rfind("error: heaviest stage ", 0), 0u) << message(r, "memory");
  EXPECT_NE(message(r, "memory").find(" GiB of 79.6 GiB on h100-sxm"), std::string::npos);
  EXPECT_TRUE(r.broken());
}

TEST(LaunchArgs, CommandLineForms) {
  auto a = parseMegatronArgs(
      "# comment\ntorchrun --nproc-per-node 8 pretrain_gpt.py \\\n  --tensor-model-parallel-size=4 \\\n"
      "  --seq-length '8192' --sequence-parallel --lr 3e-4\n",
      "f");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->values.at("--tensor-model-parallel-size"), "4");
  EXPECT_EQ(a->values.at("--seq-length"), "8192");
  EXPECT_TRUE(a->values.count("--sequence-parallel"));
  EXPECT_EQ(a->ignored, (std::vector<std::string>{"--nproc-per-node", "pretrain_gpt.py", "--lr"}));
  EXPECT_EQ(parseMegatronArgs("--seq-length", "f").error().str(), "f: --seq-length needs a value");
  EXPECT_EQ(parseMegatronArgs("--sequence-parallel=1", "f").error().str(), "f: --sequence-parallel takes no value");
  auto r = checkLaunch(load("llama3-8b"), *findGpu("h100-sxm"), 8, *parseMegatronArgs("--micro-batch-size 1", "f"));
  EXPECT_EQ(r.error().str(), "--seq-length is missing");
  r = checkLaunch(load("llama3-8b"), *findGpu("h100-sxm"), 8,
                  *parseMegatronArgs("--seq-length 4096 --tensor-model-parallel-size x", "f"));
  EXPECT_EQ(r.error().str(), "--tensor-model-parallel-size: 'x' is not a positive integer");
}

TEST(LaunchArgs, PlanForm) {
  auto a = parseLaunchPlan("tp=8,pp=16,vpp=8,cp=1,mb=1,gbs=2048,seq=8192,sp=1,distopt=1,split=embedding-loss,recompute=full");
  ASSERT_TRUE(a.ok());
  auto r = checkLaunch(load("llama3-405b"), *findGpu("h100-sxm"), 8192, *a);
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->broken()) << launchText(*r);
  EXPECT_EQ(parseLaunchPlan("tq=1").error().str(),
            "--plan: unknown key 'tq' (tp, pp, vpp, cp, ep, etp, mb, gbs, seq, sp, recompute, distopt, split)");
}

TEST(LaunchReport, Formats) {
  auto r = run("llama3-405b", 8192,
               llama("--tensor-model-parallel-size 8 --pipeline-model-parallel-size 16 --global-batch-size 2048"));
  std::string text = launchText(r);
  EXPECT_NE(text.find("error: layers-dropped: layers 126"), std::string::npos);
  EXPECT_NE(text.find("broken: "), std::string::npos);
  std::string json = launchJson(r);
  EXPECT_NE(json.find("\"verdict\": \"broken\""), std::string::npos);
  EXPECT_NE(json.find("\"id\": \"layers-dropped\""), std::string::npos);
  std::string junit = launchJUnit(r);
  EXPECT_NE(junit.find("<testcase classname=\"check-launch\" name=\"layers-dropped\">"), std::string::npos);
  EXPECT_NE(junit.find("failures=\"1\""), std::string::npos);
}

}  // namespace
}  // namespace sp::planner

// plan and check-launch through the real binary: exit codes and formats.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tests/cli_harness.h"

namespace sp::test {
namespace {

std::string cfg(const std::string& name) { return std::string(SP_SOURCE_DIR) + "/planner/configs/" + name + ".json"; }

TEST(PlanCli, JsonPlansBestFirst) {
  auto r = runCli({"plan", "--model", cfg("llama3-405b"), "--gpus", "8192", "--gpu", "h100-sxm", "--seq", "8192",
                   "--global-batch", "2048", "--fix", "tp=8,pp=16,cp=1", "--top", "3", "--format", "json"});
  ASSERT_EQ(r.code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j.size(), 1u);
  ASSERT_FALSE(j["plans"].empty());
  const auto& p = j["plans"][0];
  EXPECT_EQ(p.size(), 13u);
  EXPECT_EQ(p["tp"], 8);
  EXPECT_EQ(p["pp"], 16);
  EXPECT_EQ(p["dp"], 64);
  EXPECT_EQ(p["recompute"], "full");
}

TEST(PlanCli, NothingFitsIsExit1) {
  auto r = runCli({"plan", "--model", cfg("llama3-405b"), "--gpus", "8", "--gpu", "h100-sxm", "--seq", "8192",
                   "--global-batch", "16"});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("no layout fits: "), std::string::npos);
  EXPECT_NE(r.out.find("  memory: "), std::string::npos);
}

TEST(PlanCli, BadInputIsExit3) {
  auto r = runCli({"plan", "--model", cfg("llama3-8b"), "--gpus", "8", "--gpu", "h999", "--seq", "8192",
                   "--global-batch", "16"});
  EXPECT_EQ(r.code, 3);
  EXPECT_EQ(r.err, "error: unknown gpu kind 'h999' (known: a100-sxm-80gb, h100-sxm, h200)\n");
  r = runCli({"plan", "--model", cfg("llama3-8b"), "--gpus", "8", "--gpu", "h100-sxm", "--seq", "8192",
              "--global-batch", "16", "--fix", "tp=x"});
  EXPECT_EQ(r.code, 3);
  EXPECT_EQ(r.err, "error: --fix: tp: 'x' is not a positive integer\n");
  r = runCli({"plan", "--model", "/nonexistent.json", "--gpus", "8", "--gpu", "h100-sxm", "--seq", "8192",
              "--global-batch", "16"});
  EXPECT_EQ(r.code, 3);
  EXPECT_EQ(r.err, "error: /nonexistent.json: cannot read the model config\n");
  r = runCli({"plan", "--model", cfg("llama3-8b"), "--gpus", "0", "--gpu", "h100-sxm", "--seq", "8192",
              "--global-batch", "16"});
  EXPECT_EQ(r.code, 3);
  EXPECT_EQ(r.err, "error: --gpus must be positive\n");
}

TEST(LaunchCli, ExitCodesAndFormats) {
  std::string ex = std::string(SP_SOURCE_DIR) + "/examples/launch/";
  auto ok = runCli({"check-launch", "--model", cfg("llama3-405b"), "--megatron-args", ex + "llama3_405b_8k.args",
                    "--gpus", "8192", "--gpu", "h100-sxm"});
  EXPECT_EQ(ok.code, 0) << ok.out << ok.err;
  EXPECT_NE(ok.out.find("info: step-time: predicted step "), std::string::npos);
  auto bad = runCli({"check-launch", "--model", cfg("llama3-405b"), "--megatron-args",
                     ex + "llama3_405b_broken.args", "--gpus", "8192", "--gpu", "h100-sxm", "--format", "json"});
  EXPECT_EQ(bad.code, 1);
  auto j = nlohmann::json::parse(bad.out);
  EXPECT_EQ(j["verdict"], "broken");
  auto junit = runCli({"check-launch", "--model", cfg("llama3-405b"), "--plan", "tp=8,pp=16,gbs=2048,seq=8192,sp=1",
                       "--gpus", "8192", "--gpu", "h100-sxm", "--format", "junit"});
  EXPECT_EQ(junit.code, 1);
  EXPECT_NE(junit.out.find("<testcase classname=\"check-launch\" name=\"layers-dropped\">"), std::string::npos);
  auto missing = runCli({"check-launch", "--model", cfg("llama3-405b"), "--plan", "tp=8", "--gpus", "8192",
                         "--gpu", "h100-sxm"});
  EXPECT_EQ(missing.code, 3);
  EXPECT_EQ(missing.err, "error: --seq-length is missing\n");
  auto noFile = runCli({"check-launch", "--model", cfg("llama3-405b"), "--megatron-args", "/nonexistent.args",
                        "--gpus", "8", "--gpu", "h100-sxm"});
  EXPECT_EQ(noFile.code, 3);
  EXPECT_EQ(noFile.err, "error: /nonexistent.args: cannot read the arguments file\n");
}

}  // namespace
}  // namespace sp::test

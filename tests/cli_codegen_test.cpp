// `shardproof codegen` and `shardproof exec` end to end, on the bundled
// example: plans written only for a verified D, exec's outputs equal to
// `run`'s byte for byte, a hand-made crossed plan refused as a hang.
#include <gtest/gtest.h>

#include <filesystem>

#include "tests/cli_harness.h"

namespace sp::test {
namespace {

namespace fs = std::filesystem;

TEST(CliCodegen, VerifiedProgramRunsLikeTheInterpreter) {
  fs::path dir = tempDir("codegen");
  auto cg = runCli({"codegen", "--seq", sourcePath("examples/mlp.sp"), "--dist", sourcePath("examples/mlp_tp2.sp"),
                    "--relation", sourcePath("examples/mlp_tp2.rel"), "--out", (dir / "plans").string()});
  ASSERT_EQ(cg.code, 0) << cg.out << cg.err;
  EXPECT_NE(cg.out.find("verdict: verified"), std::string::npos) << cg.out;
  EXPECT_NE(cg.out.find("plans: 2 ranks written to"), std::string::npos) << cg.out;
  for (const char* f : {"manifest.json", "r0.plan", "r1.plan", "r0.plan.json", "r1.plan.json"})
    EXPECT_TRUE(fs::exists(dir / "plans" / f)) << f;
  auto ex = runCli({"exec", (dir / "plans").string(), "--backend", "cpu", "--seed", "5", "--out-dir", (dir / "exec").string()});
  ASSERT_EQ(ex.code, 0) << ex.err;
  auto run = runCli({"run", sourcePath("examples/mlp_tp2.sp"), "--seed", "5", "--out-dir", (dir / "run").string()});
  ASSERT_EQ(run.code, 0) << run.err;
  for (const char* r : {"r0", "r1"}) {
    std::string a = slurp((dir / "exec" / r / "y.npy").string()), b = slurp((dir / "run" / r / "y.npy").string());
    EXPECT_FALSE(a.empty());
    EXPECT_EQ(a, b) << r << "/y.npy differs";
  }
  // --input feeds every rank, as for run.
  auto in = runCli({"exec", (dir / "plans").string(), "--input", "x=" + (dir / "run" / "r0" / "y.npy").string(),
                    "--out-dir", (dir / "exec2").string()});
  EXPECT_EQ(in.code, 0) << in.err;
  auto unknown = runCli({"exec", (dir / "plans").string(), "--input", "nope=" + (dir / "run" / "r0" / "y.npy").string(),
                         "--out-dir", (dir / "exec3").string()});
  EXPECT_EQ(unknown.code, 3);
  EXPECT_NE(unknown.err.find("no rank has an input or parameter named 'nope'"), std::string::npos) << unknown.err;
  fs::remove_all(dir);
}

TEST(CliCodegen, RefutedProgramGetsNothingWritten) {
  fs::path dir = tempDir("codegen-refuted");
  auto cg = runCli({"codegen", "--seq", sourcePath("examples/mlp.sp"), "--dist",
                    sourcePath("examples/mlp_tp2_missing_allreduce.sp"), "--relation", sourcePath("examples/mlp_tp2.rel"),
                    "--out", (dir / "plans").string()});
  EXPECT_EQ(cg.code, 1) << cg.out << cg.err;
  EXPECT_NE(cg.out.find("verdict: refuted"), std::string::npos) << cg.out;
  EXPECT_NE(cg.err.find("codegen: D is refuted, not verified: no plan written"), std::string::npos) << cg.err;
  EXPECT_FALSE(fs::exists(dir / "plans"));
  fs::remove_all(dir);
}

// Two ranks that each wait for the other's send first.
TEST(CliExec, CrossedPlanIsRefusedAsAHang) {
  fs::path dir = tempDir("exec-crossed");
  std::ofstream(dir / "manifest.json") << R"({"format": "shardproof-plan-manifest", "version": 1,
 "ranks": [{"rank": 0, "plan": "r0.plan"}, {"rank": 1, "plan": "r1.plan"}]})";
  for (int r = 0; r < 2; ++r) {
    std::string peer = std::to_string(1 - r);
    std::ofstream(dir / ("r" + std::to_string(r) + ".plan"))
        << "plan \"crossed\" rank " << r << " of 2 version 1 {\n"
        << "  mesh [pp = 2]\n  arena 128\n  streams 2\n"
        << "  buffer %x: f32[4] input at 0 size 16\n"
        << "  buffer %y: f32[4] temp at 64 size 16\n"
        << "  step 0 recv s1 \"y\" %y = recv() {peer = " << peer << ", dtype = f32, shape = [4]} pair r" << peer << " step 1\n"
        << "  step 1 send s1 \"s\" send(%x) {peer = " << peer << "} pair r" << peer << " step 0\n"
        << "  output %y\n}\n";
  }
  auto ex = runCli({"exec", dir.string(), "--backend", "cpu", "--out-dir", (dir / "out").string()});
  EXPECT_EQ(ex.code, 3);
  EXPECT_NE(ex.err.find("the plans would hang: deadlock: ranks 0 -> 1 -> 0 wait for each other in a cycle: "
                        "rank 0 waits at recv 'y' (node '"),
            std::string::npos) << ex.err;
  EXPECT_NE(ex.err.find("r1.plan:7 step 0') from rank 0 tag 0"), std::string::npos) << ex.err;
  EXPECT_FALSE(fs::exists(dir / "out"));
  // A malformed plan is a located error.
  std::ofstream(dir / "r1.plan") << "plan \"crossed\" rank 1 of 2 version 1 {\n  arena 64\n  buffer %x: f33[4]\n}\n";
  auto bad = runCli({"exec", dir.string(), "--out-dir", (dir / "out").string()});
  EXPECT_EQ(bad.code, 3);
  EXPECT_NE(bad.err.find("r1.plan:3:14: unknown dtype 'f33' (did you mean 'f32'?)"), std::string::npos) << bad.err;
  fs::remove_all(dir);
}

}  // namespace
// --backend cuda: in a build without SHARDPROOF_CUDA a clear error before
// anything is read; in a CUDA build, the bundled example's plans run on the
// GPU, or without a visible device it is a clear error naming that.
// --ranks-per-process is for the cuda backend only.
TEST(CliExec, CudaBackendRunsOrSaysWhyNot) {
  auto cpu1 = runCli({"exec", "/nonexistent", "--backend", "cpu", "--ranks-per-process", "1", "--out-dir", "/tmp/x"});
  EXPECT_EQ(cpu1.code, 3);
  EXPECT_NE(cpu1.err.find("--ranks-per-process 1 needs --backend cuda"), std::string::npos) << cpu1.err;
  if (!SP_SHARDPROOF_CUDA) {
    auto ex = runCli({"exec", "/nonexistent", "--backend", "cuda", "--out-dir", "/tmp/x"});
    EXPECT_EQ(ex.code, 3);
    EXPECT_NE(ex.err.find("error: --backend cuda: shardproof was built without SHARDPROOF_CUDA "
                          "(configure with -DSHARDPROOF_CUDA=ON)"),
              std::string::npos)
        << ex.err;
    return;
  }
  fs::path dir = tempDir("exec-cuda");
  auto cg = runCli({"codegen", "--seq", sourcePath("examples/mlp.sp"), "--dist", sourcePath("examples/mlp_tp2.sp"),
                    "--relation", sourcePath("examples/mlp_tp2.rel"), "--out", (dir / "plans").string()});
  ASSERT_EQ(cg.code, 0) << cg.out << cg.err;
  auto ex = runCli({"exec", (dir / "plans").string(), "--backend", "cuda", "--out-dir", (dir / "out").string()});
  if (ex.code == 0) {  // a GPU is visible
    EXPECT_NE(ex.err.find("ran 2 of 2 ranks on cuda"), std::string::npos) << ex.err;
    EXPECT_TRUE(fs::exists(dir / "out" / "r1" / "y.npy"));
  } else {
    EXPECT_EQ(ex.code, 3) << ex.err;
    EXPECT_NE(ex.err.find("--backend cuda: no CUDA device is visible"), std::string::npos) << ex.err;
  }
  fs::remove_all(dir);
}

}  // namespace sp::test

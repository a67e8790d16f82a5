// End-to-end: `shardproof verify` on directories of per-rank ONNX files with
// ONNX Runtime's com.microsoft collectives (tests/fixtures/onnx_tp).
#include <gtest/gtest.h>

#include <filesystem>

#include "tests/cli_harness.h"

namespace sp::test {
namespace {

namespace fs = std::filesystem;

std::string tp(const std::string& rel) { return sourcePath("tests/fixtures/onnx_tp/" + rel); }

CliResult verifyTp(const std::string& seq, const std::string& dist, std::vector<std::string> extra = {}) {
  std::vector<std::string> args = {"verify", "--seq", tp(seq), "--dist", dist};
  if (extra.empty()) extra = {"--infer-relations"};
  args.insert(args.end(), extra.begin(), extra.end());
  return runCli(args);
}

TEST(CliOnnxTp, AllGatherTp2Verifies) {
  auto r = verifyTp("mlp.seq.onnx", tp("mlp_ag_tp2"));
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("verdict: verified"), std::string::npos) << r.out;
  // ONNX names that are not identifiers are quoted in relation text.
  EXPECT_NE(r.out.find("for r in world: dist[r].\"fc1.weight\" = slice(seq.\"fc1.weight\", dim=0, "
                       "start=idx(r,world)*8, end=(idx(r,world)+1)*8)"),
            std::string::npos)
      << r.out;
}

TEST(CliOnnxTp, WrittenRelationsReadBack) {
  auto dir = tempDir("onnx-tp-rel");
  std::string rel = (dir / "tp2.rel").string();
  auto w = verifyTp("mlp.seq.onnx", tp("mlp_ag_tp2"), {"--infer-relations", "--write-relations", rel});
  ASSERT_EQ(w.code, 0) << w.out << w.err;
  auto r = verifyTp("mlp.seq.onnx", tp("mlp_ag_tp2"), {"--relation", rel});
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  fs::remove_all(dir);
}

TEST(CliOnnxTp, Tp4WithAllReduceVerifies) {
  auto r = verifyTp("head.seq.onnx", tp("head_tp4"));
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("verdict: verified"), std::string::npos) << r.out;
}

TEST(CliOnnxTp, Dp2Tp2VerifiesWithRelationFile) {
  auto r = verifyTp("mlp.seq.onnx", tp("mlp_ag_dp2_tp2"), {"--relation", tp("mlp_ag_dp2_tp2.rel")});
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("verdict: verified"), std::string::npos) << r.out;
  auto inspect = runCli({"inspect", tp("mlp_ag_dp2_tp2")});
  EXPECT_EQ(inspect.code, 0) << inspect.err;
  EXPECT_NE(inspect.out.find("program: world 4, mesh onnx_replica=2 onnx_group2=2"), std::string::npos)
      << inspect.out;
  // Two mesh axes of size 2 divide fc1's dim 0: inference names them.
  auto infer = verifyTp("mlp.seq.onnx", tp("mlp_ag_dp2_tp2"));
  EXPECT_EQ(infer.code, 3) << infer.out << infer.err;
  EXPECT_NE(infer.err.find("2 mesh axes divide the dim (onnx_replica, onnx_group2; write the relation in a file and "
                           "pass --relation)"),
            std::string::npos)
      << infer.err;
}

TEST(CliOnnxTp, WrongAxisIsRefuted) {
  auto r = verifyTp("mlp.seq.onnx", tp("mlp_ag_tp2_wrong_axis"));
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("verdict: refuted"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("mlp_ag_tp2_wrong_axis/mlp.r0.onnx node '/AllGather') along dim 1 instead of 0"),
            std::string::npos)
      << r.out;
}

TEST(CliOnnxTp, MissingAllReduceIsRefuted) {
  auto r = verifyTp("head.seq.onnx", tp("head_tp4_missing_allreduce"));
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("verdict: refuted"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("missing sum over group world (all_reduce)"), std::string::npos) << r.out;
}

// The Megatron sequence-parallel twin (onnx_tp_test.cpp), whose ranks cut
// their own rows out of the attention's row-parallel partial sums: the
// reduce-scatter in place of that slice verifies (sequence parallel's own
// collective; an all_reduce before the slice would too).
TEST(CliOnnxTp, MegatronSequenceParallelTwinIsRepaired) {
  auto r = verifyTp("megatron_sp.seq.onnx", tp("megatron_sp_tp4_twin"));
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("repair: D verifies with a reduce_scatter over group world along dim 0 in place of slice "
                       "'/Slice//Slice_output_0'"),
            std::string::npos)
      << r.out;
}

// Three rank files whose AllGather says group_size 2: one clear error, exit 3.
TEST(CliOnnxTp, GroupSizeNotDividingTheRankFilesIsBadInput) {
  auto dir = tempDir("onnx-tp-three");
  for (int r = 0; r < 3; ++r)
    fs::copy_file(tp("mlp_ag_tp2/mlp.r" + std::to_string(r % 2) + ".onnx"),
                  dir / ("mlp.r" + std::to_string(r) + ".onnx"));
  auto r = verifyTp("mlp.seq.onnx", dir.string());
  EXPECT_EQ(r.code, 3) << r.out << r.err;
  EXPECT_NE(r.err.find("com.microsoft::AllGather '/AllGather' on rank 0: group_size 2 does not divide the world size "
                       "3 (the number of rank files)"),
            std::string::npos)
      << r.err;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace sp::test

// End-to-end: Dynamo torch-level graphs (TORCH_LOGS=graph_code, a
// torch.compile backend's gm.print_readable()), written in torch 2.x's exact
// print format by tests/fixtures/make_dynamo_fixtures.py into
// tests/fixtures/capture_dynamo: a Megatron-style TP MLP and a GPT-2 style
// block (layer norms, q/k/v split over heads, causal scaled_dot_product_attention,
// tanh GELU MLP, eval-mode dropout), per rank at TP 2 and 4 with
// `torch.ops._c10d_functional.all_reduce` + `wait_tensor`, verified against
// the sequential torch-level graph with inferred relations; twins without
// the all_reduces are refuted where the partial sums are first read.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "tests/cli_harness.h"

namespace sp::test {
namespace {

namespace fs = std::filesystem;

std::string fixture(const std::string& rel) { return sourcePath("tests/fixtures/capture_dynamo/" + rel); }

struct Case {
  std::string block;
  int world;
};

std::string caseName(const ::testing::TestParamInfo<Case>& info) {
  return info.param.block + "_tp" + std::to_string(info.param.world);
}

CliResult verify(const std::string& dir) {
  return runCli({"verify", "--seq", dir + "/seq.py", "--dist", dir + "/dist", "--mesh", dir + "/mesh.txt",
                 "--infer-relations", "--format", "json"});
}

nlohmann::json parsed(const CliResult& r) {
  try {
    return nlohmann::json::parse(r.out);
  } catch (const std::exception& e) {
    ADD_FAILURE() << "not JSON: " << e.what() << "\n" << r.out << r.err;
    return {};
  }
}

class DynamoCapture : public ::testing::TestWithParam<Case> {};

TEST_P(DynamoCapture, Verified) {
  const Case& c = GetParam();
  auto r = verify(fixture(c.block + "_tp" + std::to_string(c.world)));
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  auto j = parsed(r);
  EXPECT_EQ(j["verdict"], "verified") << r.out;
}

// S refines S (a one-rank program of itself) and D refines D (the
// distributed program against itself with the identity relations).
TEST_P(DynamoCapture, SequentialAndDistributedRefineThemselves) {
  const Case& c = GetParam();
  std::string dir = fixture(c.block + "_tp" + std::to_string(c.world));
  auto r = verifyAgainstItself(dir + "/seq.py", "dynamo-self-" + c.block + std::to_string(c.world));
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("verdict: verified"), std::string::npos) << r.out;
  // rank 0 of D as a sequential model of a one-rank program of itself
  r = verifyAgainstItself(dir + "/dist/" + c.block + ".r0.py", "dynamo-self-r0-" + c.block + std::to_string(c.world),
                          c.block + ".r0.py");
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("verdict: verified"), std::string::npos) << r.out;
}

INSTANTIATE_TEST_SUITE_P(Blocks, DynamoCapture,
                         ::testing::Values(Case{"mlp", 2}, Case{"mlp", 4}, Case{"gpt_block", 2}, Case{"gpt_block", 4}),
                         caseName);

// The twins (TP 2, all_reduces removed): refuted, localized at the `# File:`
// line of the first op that reads the partial sums: the MLP's bias add; the
// block's second layer norm (the bias and residual adds before it still hold
// sums of the ranks' terms).
TEST(DynamoCapture, TwinsWithoutTheAllReducesAreRefuted) {
  for (const auto& [block, failLine] : std::vector<std::pair<std::string, int>>{{"mlp", 15}, {"gpt_block", 28}}) {
    SCOPED_TRACE(block);
    auto r = verify(fixture(block + "_tp2_twin"));
    ASSERT_EQ(r.code, 1) << r.out << r.err;
    auto j = parsed(r);
    ASSERT_EQ(j["verdict"], "refuted") << r.out;
    const std::string msg = j["failure"]["message"].get<std::string>();
    EXPECT_NE(msg.find("missing sum over group tp (all_reduce)"), std::string::npos) << msg;
    const std::string loc = j["failure"]["location"].get<std::string>();
    EXPECT_EQ(loc.rfind("/work/model/gpt.py:" + std::to_string(failLine), 0), 0u) << r.out;
  }
}


// In-place forms (tests/fixtures/capture_dynamo_inplace, make.py): a TP 2
// MLP with an MoE router written as users write it (einsum, relu_, *=, a +=
// bias after the all_reduce, routing weights renormalized with /=) verifies
// from the CLI, and so do S and D against themselves; its twin without the
// all_reduce is refuted at the capture line that reads the partial sums.
// The capture pair in `dir` (seq.py, dist/<rankFile> for rank 0) verifies
// from the CLI, and so do S and rank 0 against themselves; `twin` is
// refuted: its report.
nlohmann::json pairVerifiesAndTwinIsRefuted(const std::string& dir, const std::string& rankFile,
                                            const std::string& twin) {
  auto r = verify(dir);
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_EQ(parsed(r)["verdict"], "verified") << r.out;
  r = verifyAgainstItself(dir + "/seq.py", rankFile + "-seq-self");
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  r = verifyAgainstItself(dir + "/dist/" + rankFile, rankFile + "-self", rankFile);
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  auto t = verify(twin);
  EXPECT_EQ(t.code, 1) << t.out << t.err;
  auto j = parsed(t);
  EXPECT_EQ(j["verdict"], "refuted") << t.out;
  return j;
}

TEST(DynamoCapture, InPlaceFormsVerifyAndTheirTwinIsRefuted) {
  auto j = pairVerifiesAndTwinIsRefuted(sourcePath("tests/fixtures/capture_dynamo_inplace/moe_tp2"), "moe.r0.py",
                                        sourcePath("tests/fixtures/capture_dynamo_inplace/moe_tp2_twin"));
  ASSERT_EQ(j["verdict"], "refuted");
  const std::string msg = j["failure"]["message"].get<std::string>();
  EXPECT_NE(msg.find("missing sum over group tp (all_reduce)"), std::string::npos) << msg;
  EXPECT_NE(j["failure"]["location"].get<std::string>().find("moe.py:15"), std::string::npos) << j.dump(1);
}

// Subscript assignments (tests/fixtures/capture_dynamo_setitem, written by
// hand, its README): a vocab-parallel embedding at TP 2 whose ranks mask
// their ids and rows in place (`masked_input[input_mask] = 0`,
// `output_parallel[input_mask, :] = 0.0`), S and D both zeroing the padding
// tokens and the first position (`output[pad_mask] = 0.0`,
// `output[:, 0] = 0.0`), verifies from the CLI, and so do S and D against
// themselves; the twin zeroing only half of each masked row is refuted at
// the lookup, no D tensor (its masked write `setitem_1` among the closest)
// rebuilding it, and a witness shows the difference.
TEST(DynamoCapture, SubscriptAssignmentsVerifyAndTheirTwinIsRefuted) {
  auto j = pairVerifiesAndTwinIsRefuted(sourcePath("tests/fixtures/capture_dynamo_setitem/vocab_tp2"), "emb.r0.py",
                                        sourcePath("tests/fixtures/capture_dynamo_setitem/vocab_tp2_twin"));
  ASSERT_EQ(j["verdict"], "refuted");
  const std::string msg = j["failure"]["message"].get<std::string>();
  EXPECT_EQ(msg.rfind("no relation found between S value 'output_parallel' and D tensors", 0), 0u) << msg;
  EXPECT_NE(msg.find("r0:setitem_1 at /work/model/emb.py:26"), std::string::npos) << msg;
  EXPECT_EQ(j["failure"]["location"].get<std::string>().rfind("/work/model/emb.py:24", 0), 0u) << j.dump(1);
  EXPECT_GT(j["failure"]["witness"]["max_abs_err"].get<double>(), 0.1) << j.dump(1);
}

// `y[:, 0] += self.cls_bias` after the all_reduce, as FX prints Python's
// augmented subscript assignment (getitem, iadd, setitem;
// tests/fixtures/capture_dynamo_setitem/cls_tp2, its README): the in-place
// add on the view, written back into the all-reduced output, imports as
// that output with the bias added at token 0, and the pair verifies from
// the CLI, S and D also against themselves; the twin adds the bias to each
// rank's partial sums before the all_reduce (so the sum holds it twice):
// refuted at the output, S's value being a sum of D intermediates (rank 0's
// sum with the bias and another rank's without) that no D output holds,
// with a witness.
TEST(DynamoCapture, ViewWrittenBackVerifiesAndItsTwinIsRefuted) {
  auto j = pairVerifiesAndTwinIsRefuted(sourcePath("tests/fixtures/capture_dynamo_setitem/cls_tp2"), "cls.r0.py",
                                        sourcePath("tests/fixtures/capture_dynamo_setitem/cls_tp2_twin"));
  ASSERT_EQ(j["verdict"], "refuted");
  const std::string msg = j["failure"]["message"].get<std::string>();
  EXPECT_EQ(msg.rfind("S output 'mul' is ", 0), 0u) << msg;
  EXPECT_NE(msg.find("but no D output rebuilds it"), std::string::npos) << msg;
  EXPECT_EQ(j["failure"]["location"].get<std::string>().rfind("/work/model/cls.py:16", 0), 0u) << j.dump(1);
  EXPECT_GT(j["failure"]["witness"]["outputs"]["mul"]["max_abs_err"].get<double>(), 0.1) << j.dump(1);
}

// Mixtral's sparse MoE block as Dynamo prints it with
// capture_dynamic_output_shape_ops (tests/fixtures/capture_dynamo_moe, its
// README): `idx, top_x = torch.where(expert_mask[expert_idx])` returns as
// many positions as tokens chose the expert, a size that depends on values
// (`u0`). inspect and verify stop with exit 3 naming the call, its node and
// the capture line, before any later node of unknown size.
TEST(DynamoCapture, SparseMoeWhereIsDataDependent) {
  const std::string f = sourcePath("tests/fixtures/capture_dynamo_moe/mixtral_moe.py");
  const std::string want = "mixtral_moe.py:47: torch-level call torch.where (node 'where') returns a tensor whose "
                           "size depends on tensor values";
  auto r = runCli({"inspect", f});
  EXPECT_EQ(r.code, 3) << r.out << r.err;
  EXPECT_NE(r.err.find(want), std::string::npos) << r.err;
  r = verifyAgainstItself(f, "moe-where");
  EXPECT_EQ(r.code, 3) << r.out << r.err;
  EXPECT_NE(r.err.find(want), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("unexpected character"), std::string::npos) << r.err;
}

// `shardproof inspect` reads a torch-level graph; an untranslated callable
// is exit 3 with the callable and the capture line.
TEST(DynamoCapture, InspectAndUnsupportedCallable) {
  auto r = runCli({"inspect", fixture("gpt_block_tp2/seq.py"), "--format", "json"});
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  auto j = parsed(r);
  EXPECT_EQ(j["outputs"][0]["name"], "add_3") << r.out;
  auto dir = tempDir("dynamo-unsupported");
  std::ofstream(dir / "bad.py") << "class GraphModule(torch.nn.Module):\n"
                                   "    def forward(self, L_x_: \"f32[2, 3]\"):\n"
                                   "        l_x_ = L_x_\n"
                                   "        cumprod: \"f32[2, 3]\" = torch.cumprod(l_x_, 1);  l_x_ = None\n"
                                   "        return (cumprod,)\n";
  r = runCli({"inspect", (dir / "bad.py").string()});
  EXPECT_EQ(r.code, 3) << r.out << r.err;
  EXPECT_NE(r.err.find("bad.py:4"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("torch.cumprod"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("unsupported torch-level call torch.cumprod (node 'cumprod')"), std::string::npos) << r.err;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace sp::test

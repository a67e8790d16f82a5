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
// (`u0`). The block's output depends on it (the experts' rows are added
// into `final_hidden_states` in place, by index_add_), the router's logits
// do not: inspect shows the graph of the logits and lists the block's
// output as dropped, naming the call, its node and the capture line (exit
// 0); verify against itself checks the logits and is inconclusive naming
// the call (exit 2), and verified with `--outputs router_logits`, saying
// what was not checked. Before the partial import, both stopped at the
// call with exit 3.
TEST(DynamoCapture, SparseMoeWhereIsDataDependent) {
  const std::string f = sourcePath("tests/fixtures/capture_dynamo_moe/mixtral_moe.py");
  const std::string where = "torch.where (node 'where') at " + f + ":47";
  auto r = runCli({"inspect", f});
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("outputs (1):\n  router_logits: f32[4, 3]\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("dropped outputs (1):\n  final_hidden_states_1: depends on " + where +
                       ", whose result size depends on tensor values\n"),
            std::string::npos)
      << r.out;
  r = runCli({"inspect", f, "--format", "json"});
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  auto j = parsed(r);
  ASSERT_EQ(j["outputs"].size(), 1u) << r.out;
  EXPECT_EQ(j["outputs"][0]["name"], "router_logits");
  ASSERT_EQ(j["dropped_outputs"].size(), 1u) << r.out;
  EXPECT_EQ(j["dropped_outputs"][0]["name"], "final_hidden_states_1");
  EXPECT_EQ(j["dropped_outputs"][0]["op"], "torch.where");
  EXPECT_EQ(j["dropped_outputs"][0]["node"], "where");
  EXPECT_EQ(j["dropped_outputs"][0]["location"], f + ":47");

  r = verifyAgainstItself(f, "moe-where");
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  EXPECT_NE(r.out.find("verdict: inconclusive"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  seq.router_logits = dist[0].router_logits\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("reason: output 'final_hidden_states_1' (S's value depends on " + where), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("(--outputs router_logits checks the others alone)"), std::string::npos) << r.out;

  auto one = tempDir("moe-where-outputs");
  fs::copy_file(f, one / "seq.r0.py");
  r = runCli({"verify", "--seq", f, "--dist", one.string(), "--infer-relations", "--outputs", "router_logits"});
  fs::remove_all(one);
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("verdict: verified"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("assumes: output 'final_hidden_states_1' was not checked (not in --outputs): S's value "
                       "depends on " + where),
            std::string::npos)
      << r.out;
}

// A model with a dense output and a data-dependent one
// (tests/fixtures/capture_dynamo_dd, its README): an MLP's output `out` and
// its rows `picked = out[torch.where(out.sum(-1) > 0)[0]]`, sequential and
// at TP 2.
std::string ddFixture(const std::string& rel) { return sourcePath("tests/fixtures/capture_dynamo_dd/" + rel); }

CliResult verifyDd(const std::string& dir, std::vector<std::string> extra = {}) {
  std::vector<std::string> args{"verify", "--seq", dir + "/seq.py", "--dist", dir + "/dist", "--mesh",
                                dir + "/mesh.txt", "--infer-relations", "--format", "json"};
  args.insert(args.end(), extra.begin(), extra.end());
  return runCli(args);
}

// Without --outputs: `out` is checked (and has its relation), `picked` is
// not, and the verdict is inconclusive naming torch.where and S's line.
TEST(DataDependentCapture, UncheckedOutputMakesTheVerdictInconclusive) {
  const std::string dir = ddFixture("picked_tp2");
  auto r = verifyDd(dir);
  ASSERT_EQ(r.code, 2) << r.out << r.err;
  auto j = parsed(r);
  EXPECT_EQ(j["verdict"], "inconclusive") << r.out;
  const std::string why = "S's value depends on torch.where (node 'where') at " + dir +
                          "/seq.py:25, whose result size depends on tensor values";
  EXPECT_EQ(j["reason"], "output 'picked' (" + why + ") not checked: the import left it out, having no IR for a "
                         "size that depends on tensor values (--outputs out checks the others alone)")
      << r.out;
  ASSERT_EQ(j["outputs"].size(), 2u) << r.out;
  EXPECT_EQ(j["outputs"][0]["name"], "out");
  EXPECT_TRUE(j["outputs"][0]["relation"].is_string()) << r.out;
  EXPECT_EQ(j["outputs"][1]["name"], "picked");
  EXPECT_TRUE(j["outputs"][1]["relation"].is_null()) << r.out;
  EXPECT_EQ(j["outputs"][1]["not_checked"], why) << r.out;
  EXPECT_TRUE(assumes(j, "output 'picked' was not checked: " + why + ", and the import left it out")) << r.out;
  // the text report says the same
  r = runCli({"verify", "--seq", dir + "/seq.py", "--dist", dir + "/dist", "--mesh", dir + "/mesh.txt",
              "--infer-relations"});
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  EXPECT_NE(r.out.find("verdict: inconclusive\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  seq.picked: not checked (" + why + ")\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("reason: output 'picked' (" + why + ") not checked"), std::string::npos) << r.out;
  // junit: out fails (inconclusive), picked is skipped
  r = runCli({"verify", "--seq", dir + "/seq.py", "--dist", dir + "/dist", "--mesh", dir + "/mesh.txt",
              "--infer-relations", "--format", "junit"});
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  EXPECT_NE(r.out.find("tests=\"2\" failures=\"1\" errors=\"0\" skipped=\"1\""), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("name=\"refines:picked\" time=\"0.000\">\n      <skipped message=\"not checked: "),
            std::string::npos)
      << r.out;
}

// `--outputs out`: verified, folded or not, and the report says which
// output was not checked and why; asking for `picked` alone checks nothing.
TEST(DataDependentCapture, OutputsRestrictedToTheDensePartVerify) {
  const std::string dir = ddFixture("picked_tp2");
  auto r = verifyDd(dir, {"--outputs", "out"});
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  auto j = parsed(r);
  EXPECT_EQ(j["verdict"], "verified") << r.out;
  EXPECT_EQ(j["reason"], "") << r.out;
  ASSERT_EQ(j["outputs"].size(), 2u) << r.out;
  EXPECT_EQ(j["outputs"][0]["relation"], "dist[0].out") << r.out;
  EXPECT_EQ(j["outputs"][1]["name"], "picked") << r.out;
  EXPECT_TRUE(assumes(j, "output 'picked' was not checked (not in --outputs): S's value depends on torch.where "
                         "(node 'where') at " + dir + "/seq.py:25"))
      << r.out;
  r = verifyDd(dir, {"--outputs", "out", "--no-fold"});
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  r = verifyDd(dir, {"--outputs", "picked"});
  ASSERT_EQ(r.code, 2) << r.out << r.err;
  j = parsed(r);
  EXPECT_EQ(j["verdict"], "inconclusive") << r.out;
  EXPECT_EQ(j["reason"].get<std::string>().rfind("output 'picked' (S's value depends on torch.where", 0), 0u) << r.out;
  EXPECT_EQ(j["reason"].get<std::string>().find("--outputs out"), std::string::npos) << r.out;
  // an unknown name stays bad input
  r = verifyDd(dir, {"--outputs", "nope"});
  EXPECT_EQ(r.code, 3) << r.out << r.err;
}

// S refines S and D refines D (S, and rank 0, against a one-rank program
// of itself), on the outputs the import keeps: inconclusive without
// --outputs, verified with it.
TEST(DataDependentCapture, SequentialAndDistributedRefineThemselves) {
  const std::string dir = ddFixture("picked_tp2");
  auto r = verifyAgainstItself(dir + "/seq.py", "dd-self");
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  EXPECT_NE(r.out.find("  seq.out = dist[0].out\n"), std::string::npos) << r.out;
  for (const auto& [file, tag] : std::vector<std::pair<std::string, std::string>>{{"seq.py", "seq.r0.py"},
                                                                                  {"dist/picked.r0.py", "picked.r0.py"}}) {
    auto one = tempDir("dd-self-" + tag);
    fs::copy_file(dir + "/" + file, one / tag);
    r = runCli({"verify", "--seq", dir + "/" + file, "--dist", one.string(), "--infer-relations", "--outputs", "out"});
    fs::remove_all(one);
    EXPECT_EQ(r.code, 0) << file << "\n" << r.out << r.err;
  }
}

// The twin without the all_reduce: refuted at `out`, with or without
// --outputs: the data-dependent part does not hide the missing sum.
TEST(DataDependentCapture, TwinWithoutTheAllReduceIsRefuted) {
  const std::string dir = ddFixture("picked_tp2_twin");
  for (const auto& extra : std::vector<std::vector<std::string>>{{}, {"--outputs", "out"}}) {
    auto r = verifyDd(dir, extra);
    ASSERT_EQ(r.code, 1) << r.out << r.err;
    auto j = parsed(r);
    EXPECT_EQ(j["verdict"], "refuted") << r.out;
    const std::string msg = j["failure"]["message"].get<std::string>();
    EXPECT_NE(msg.find("missing sum over group tp (all_reduce)"), std::string::npos) << msg;
    EXPECT_EQ(j["failure"]["location"].get<std::string>().rfind("/work/model/router.py:24", 0), 0u) << r.out;
    EXPECT_TRUE(assumes(j, "output 'picked' was not checked")) << r.out;
  }
}

// A fixture's file with each (from, to) replaced in turn (every
// occurrence), in `dir` under the same relative name.
void writeEdited(const std::string& src, const fs::path& dir, const std::string& rel,
                 const std::vector<std::pair<std::string, std::string>>& edits = {}) {
  std::string text = slurp(src + "/" + rel);
  for (const auto& [from, to] : edits)
    for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
      text.replace(at, from.size(), to);
  fs::create_directories((dir / rel).parent_path());
  std::ofstream(dir / rel) << text;
}

// What D leaves out matters too. D's output of an S output's name left out:
// that S output is not checked (nothing rebuilds it). A D output left out
// that names no S output: a proof over the rest stands, saying so; a
// refutation does not (that output might have been the rebuild it missed).
// A collective among D's statements left out: an assumption of the verdict.
// An expect line that reads a D output the import left out cannot be
// evaluated: its S output is not checked either (was exit 3, "rank 0 has
// no tensor 'picked'"); with --outputs naming only it, nothing is left to
// check, and the verdict is inconclusive saying why.
TEST(DataDependentCapture, ExpectLineReadingALeftOutOutputIsNotChecked) {
  const std::string dir = ddFixture("picked_tp2");
  auto tmp = tempDir("dd-expect");
  std::ofstream(tmp / "on-dropped.expect") << "expect seq.out = concat(dim=0, dist[0].picked, dist[1].picked)\n";
  auto r = verifyDd(dir, {"--outputs", "out", "--expect", (tmp / "on-dropped.expect").string()});
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  auto j = parsed(r);
  EXPECT_EQ(j["verdict"], "inconclusive") << r.out;
  EXPECT_NE(j["reason"].get<std::string>().find("output 'out' (its expect line (" + (tmp / "on-dropped.expect").string() +
                                                ":1) reads D's 'picked' (picked.r0.py), which depends on torch.where"),
            std::string::npos)
      << r.out;
  fs::remove_all(tmp);
}

TEST(DataDependentCapture, WhatDLeavesOutIsSaid) {
  const std::string src = ddFixture("picked_tp2");
  const std::string whereLines = "        where = torch.where(keep);  keep = None\n"
                                 "        rows: \"i64[u0]\" = where[0];  where = None\n";
  // S's `picked` static (every row of out), D's data-dependent
  auto dir = tempDir("dd-dist-namesake");
  writeEdited(src, dir, "seq.py",
              {{"        picked: \"f32[u0, 16]\" = out[rows];  rows = None\n",
                "        picked: \"f32[8, 16]\" = out * 1.0\n"},
               {whereLines, ""}});
  for (const auto& f : {"dist/picked.r0.py", "dist/picked.r1.py", "mesh.txt"}) writeEdited(src, dir, f);
  auto r = verifyDd(dir.string());
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  auto j = parsed(r);
  EXPECT_EQ(j["verdict"], "inconclusive") << r.out;
  EXPECT_EQ(j["reason"].get<std::string>().rfind("output 'picked' (D's output of that name (picked.r0.py) depends on "
                                                 "torch.where (node 'where') at " + dir.string() +
                                                     "/dist/picked.r0.py:29",
                                                 0),
            0u)
      << r.out;
  r = verifyDd(dir.string(), {"--outputs", "out"});
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  fs::remove_all(dir);

  // S without `picked`; D returns it, and all-gathers it first
  for (const std::string& pair : {"picked_tp2", "picked_tp2_twin"}) {
    SCOPED_TRACE(pair);
    const std::string from = ddFixture(pair);
    dir = tempDir("dd-dist-only");
    // the twin's rank files have no all_reduce: 4 lines fewer
    const int whereLine = pair == "picked_tp2" ? 29 : 25, gatherLine = whereLine + 5;
    writeEdited(from, dir, "seq.py", {{"        return (out, picked)\n", "        return (out,)\n"}});
    writeEdited(from, dir, "mesh.txt");
    for (const auto& f : {"dist/picked.r0.py", "dist/picked.r1.py"})
      writeEdited(from, dir, f,
                  {{"        return (out, picked)\n",
                    "        all_gather_into_tensor: \"f32[2*u0, 16]\" = "
                    "torch.ops._c10d_functional.all_gather_into_tensor(picked, 2, '0');  picked = None\n"
                    "        gathered: \"f32[2*u0, 16]\" = torch.ops._c10d_functional.wait_tensor("
                    "all_gather_into_tensor);  all_gather_into_tensor = None\n"
                    "        return (out, gathered)\n"}});
    r = verifyDd(dir.string());
    j = parsed(r);
    EXPECT_TRUE(assumes(j, "D's output 'gathered' (picked.r0.py) depends on torch.where (node 'where') at " +
                               dir.string() + "/dist/picked.r0.py:" + std::to_string(whereLine) +
                               ", whose result size depends on tensor values, "
                               "and the import left it out: no S output was rebuilt from it"))
        << r.out;
    EXPECT_TRUE(assumes(j, "the import left out D's collectives that depend on a data-dependent size "
                           "(_c10d_functional.all_gather_into_tensor (node 'all_gather_into_tensor') at " +
                               dir.string() + "/dist/picked.r0.py:" + std::to_string(gatherLine) + ", "))
        << r.out;
    if (pair == "picked_tp2") {
      EXPECT_EQ(r.code, 0) << r.out << r.err;
      EXPECT_EQ(j["verdict"], "verified") << r.out;
    } else {
      EXPECT_EQ(r.code, 2) << r.out << r.err;
      EXPECT_EQ(j["verdict"], "inconclusive") << r.out;
      EXPECT_EQ(j["reason"].get<std::string>().rfind("refuted on what the import read, but D's output 'gathered'", 0),
                0u)
          << r.out;
      EXPECT_FALSE(j["failure"].is_null()) << r.out;
    }
    fs::remove_all(dir);
  }
}

// inspect of the TP 2 program lists the dropped output of each rank file.
TEST(DataDependentCapture, InspectListsDroppedOutputsPerRank) {
  auto r = runCli({"inspect", ddFixture("picked_tp2/dist")});
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("dropped outputs (2):\n  picked (picked.r0.py): depends on torch.where (node 'where') at "),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("  picked (picked.r1.py): depends on torch.where"), std::string::npos) << r.out;
  r = runCli({"inspect", ddFixture("picked_tp2/seq.py"), "--print-ir"});
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("output %out"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("note: output 'picked' was left out: it depends on torch.where (node 'where') at "),
            std::string::npos)
      << r.err;
  // nothing left: the import's error, as before
  auto dir = tempDir("dd-nothing-left");
  std::ofstream(dir / "only.py") << "class GraphModule(torch.nn.Module):\n"
                                    "    def forward(self, L_x_: \"f32[4]\"):\n"
                                    "        l_x_ = L_x_\n"
                                    "        gt: \"b8[4]\" = l_x_ > 0\n"
                                    "        nz: \"i64[u0, 1]\" = torch.nonzero(gt);  gt = None\n"
                                    "        return (nz,)\n";
  r = runCli({"inspect", (dir / "only.py").string()});
  EXPECT_EQ(r.code, 3) << r.out << r.err;
  EXPECT_NE(r.err.find("only.py:5: torch-level call torch.nonzero (node 'nz') returns a tensor whose size depends "
                       "on tensor values"),
            std::string::npos)
      << r.err;
  fs::remove_all(dir);
  // a command that runs the graph does not read it partially
  r = runCli({"run", ddFixture("picked_tp2/seq.py"), "--out-dir", tempDir("dd-run").string()});
  EXPECT_EQ(r.code, 3) << r.out << r.err;
  EXPECT_NE(r.err.find("torch-level call torch.where (node 'where') returns a tensor whose size depends on tensor "
                       "values"),
            std::string::npos)
      << r.err;
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

// End-to-end tests of the shardproof binary: help, exit codes, messages.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "ir/npy.h"
#include "tests/cli_harness.h"

namespace sp::test {
namespace {

TEST(Cli, HelpListsCommands) {
  auto r = runCli({"--help"});
  EXPECT_EQ(r.code, 0);
  EXPECT_NE(r.out.find("inspect"), std::string::npos);
  EXPECT_NE(r.out.find("run"), std::string::npos);
}

TEST(Cli, NoCommandIsBadInput) {
  auto r = runCli({});
  EXPECT_EQ(r.code, 3);
}

TEST(Cli, UnknownFlagIsBadInput) {
  auto r = runCli({"inspect", "--no-such-flag", "x.onnx"});
  EXPECT_EQ(r.code, 3);
}

TEST(Cli, MissingModelFile) {
  auto r = runCli({"inspect", "/nonexistent/model.onnx"});
  EXPECT_EQ(r.code, 3);
  EXPECT_EQ(r.err, "error: '/nonexistent/model.onnx' does not exist\n");
}

TEST(Cli, UnknownModelFormat) {
  auto dir = tempDir("fmt");
  std::ofstream(dir / "model.xyz") << "hello";
  auto r = runCli({"inspect", (dir / "model.xyz").string()});
  EXPECT_EQ(r.code, 3);
  EXPECT_NE(r.err.find("unknown model format '.xyz'"), std::string::npos) << r.err;
}

TEST(Cli, CorruptOnnxIsOneClearError) {
  auto dir = tempDir("corrupt");
  std::ofstream(dir / "bad.onnx", std::ios::binary) << std::string("\x08\x07\x12\xff\xff\xff garbage", 16);
  auto r = runCli({"inspect", (dir / "bad.onnx").string()});
  EXPECT_EQ(r.code, 3);
  EXPECT_EQ(r.err.rfind("error: ", 0), 0u) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

TEST(Cli, EmptyRankDirectory) {
  auto dir = tempDir("emptydir");
  auto r = runCli({"inspect", dir.string()});
  EXPECT_EQ(r.code, 3);
  EXPECT_NE(r.err.find("has no per-rank files"), std::string::npos) << r.err;
}

TEST(Cli, RankDirectoryWithGap) {
  auto dir = tempDir("gap");
  std::ofstream(dir / "m.r0.onnx") << "x";
  std::ofstream(dir / "m.r2.onnx") << "x";
  auto r = runCli({"inspect", dir.string()});
  EXPECT_EQ(r.code, 3);
  EXPECT_NE(r.err.find("has no file for rank 1"), std::string::npos) << r.err;
}

TEST(Cli, BadInputArgument) {
  auto r = runCli({"run", sourcePath("examples/mlp.sp"), "--input", "novalue", "--out-dir", "/tmp/x"});
  EXPECT_EQ(r.code, 3);
  EXPECT_NE(r.err.find("is not NAME=FILE.npy"), std::string::npos) << r.err;
}

TEST(CliInspect, OnnxJsonHasContractFields) {
  auto r = runCli({"inspect", sourcePath("tests/fixtures/onnx/gpt2_block_op17_dyn.onnx"), "--format", "json"});
  ASSERT_EQ(r.code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["inputs"].size(), 1u);
  EXPECT_EQ(j["inputs"][0]["name"], "x");
  EXPECT_EQ(j["inputs"][0]["dtype"], "f32");
  EXPECT_EQ(j["inputs"][0]["shape"][0], "batch");
  EXPECT_EQ(j["inputs"][0]["shape"][1], "seq");
  EXPECT_EQ(j["outputs"][0]["name"], "y");
  EXPECT_GT(j["parameters"].get<int64_t>(), 0);
  EXPECT_GT(j["ops"]["matmul"].get<int64_t>(), 0);
  EXPECT_GT(j["ops"]["softmax"].get<int64_t>(), 0);
}

TEST(CliInspect, PrintIrReparses) {
  auto dir = tempDir("printir");
  auto r = runCli({"inspect", sourcePath("tests/fixtures/onnx/llama_block_op17.onnx"), "--print-ir"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("graph "), std::string::npos);
  std::ofstream(dir / "llama.sp") << r.out;
  auto again = runCli({"inspect", (dir / "llama.sp").string(), "--print-ir"});
  ASSERT_EQ(again.code, 0) << again.err;
  EXPECT_EQ(again.out, r.out);
}

TEST(CliInspect, ProgramJson) {
  auto r = runCli({"inspect", sourcePath("examples/mlp_tp2.sp"), "--format", "json"});
  ASSERT_EQ(r.code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["world_size"], 2);
  EXPECT_EQ(j["mesh"]["tp"], 2);
  ASSERT_EQ(j["ranks"].size(), 2u);
  EXPECT_EQ(j["ranks"][1]["ops"]["all_reduce"], 1);
}

TEST(CliRun, OnnxMatchesTorch) {
  auto dir = tempDir("run");
  std::string fx = sourcePath("tests/fixtures/onnx/");
  auto r = runCli({"run", fx + "gpt2_block_op17.onnx", "--input", "x=" + fx + "gpt2_block.in.x.npy",
                   "--out-dir", dir.string()});
  ASSERT_EQ(r.code, 0) << r.err;
  auto got = ir::readNpy((dir / "y.npy").string());
  auto want = ir::readNpy(fx + "gpt2_block.out.y.npy");
  ASSERT_TRUE(got.ok() && want.ok());
  ASSERT_EQ(got->dims(), want->dims());
  // Elementwise |got - want| <= 1e-6 + 1e-5 |want| (f32 against torch's f32).
  for (int64_t i = 0; i < got->numel(); ++i) {
    double w = want->getAsDouble(i);
    ASSERT_LE(std::abs(got->getAsDouble(i) - w), 1e-6 + 1e-5 * std::abs(w)) << "element " << i;
  }
}

TEST(CliRun, OutputNamesAreSanitizedAndSeedsMatter) {
  auto dir = tempDir("sanitize");
  std::ofstream(dir / "g.sp") << "graph g {\n  input %x: f32[3]\n  %\"a/b:c\": f32[3] = exp(%x)\n  output %\"a/b:c\"\n}\n";
  auto r = runCli({"run", (dir / "g.sp").string(), "--seed", "7", "--out-dir", (dir / "o7").string()});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(std::filesystem::exists(dir / "o7" / "a_b_c.npy"));
  auto r2 = runCli({"run", (dir / "g.sp").string(), "--seed", "8", "--out-dir", (dir / "o8").string()});
  ASSERT_EQ(r2.code, 0) << r2.err;
  auto a = ir::readNpy((dir / "o7" / "a_b_c.npy").string());
  auto b = ir::readNpy((dir / "o8" / "a_b_c.npy").string());
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_FALSE(a->identical(*b));
}

TEST(CliRun, ProgramWritesPerRankOutputs) {
  auto dir = tempDir("runprog");
  auto r = runCli({"run", sourcePath("examples/mlp_tp2.sp"), "--out-dir", dir.string()});
  ASSERT_EQ(r.code, 0) << r.err;
  auto y0 = ir::readNpy((dir / "r0" / "y.npy").string());
  auto y1 = ir::readNpy((dir / "r1" / "y.npy").string());
  ASSERT_TRUE(y0.ok() && y1.ok());
  EXPECT_TRUE(y0->identical(*y1));  // all-reduced, replicated
}

TEST(CliRun, WrongInputDtypeIsBadInput) {
  auto dir = tempDir("wrongdtype");
  ir::Tensor t(ir::DType::I64, {2, 64});
  ASSERT_TRUE(ir::writeNpy((dir / "x.npy").string(), t).ok());
  auto r = runCli({"run", sourcePath("examples/mlp.sp"), "--input", "x=" + (dir / "x.npy").string(),
                   "--out-dir", (dir / "o").string()});
  EXPECT_EQ(r.code, 3);
  EXPECT_NE(r.err.find("input 'x'"), std::string::npos) << r.err;
}

std::vector<std::string> verifyArgs(const std::string& dist) {
  return {"verify", "--seq", sourcePath("examples/mlp.sp"), "--dist", sourcePath("examples/" + dist),
          "--relation", sourcePath("examples/mlp_tp2.rel")};
}

TEST(CliVerify, ExampleVerifiesWithExitZero) {
  auto r = runCli(verifyArgs("mlp_tp2.sp"));
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("verdict: verified"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("seq.y = dist[0].y"), std::string::npos) << r.out;
}

TEST(CliVerify, MissingAllReduceIsRefutedWithWitnessJson) {
  auto args = verifyArgs("mlp_tp2_missing_allreduce.sp");
  args.insert(args.end(), {"--format", "json"});
  auto r = runCli(args);
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["verdict"], "refuted");
  EXPECT_EQ(j["outputs"][0]["name"], "y");
  EXPECT_EQ(j["failure"]["seq_op"], "add 'y'");
  EXPECT_NE(j["failure"]["location"].get<std::string>().find("mlp.sp:12"), std::string::npos);
  EXPECT_GT(j["failure"]["witness"]["outputs"]["y"]["max_rel_err"].get<double>(), 1e-3);
  // Explained in the user's terms, and compared with the expected D output.
  std::string msg = j["failure"]["message"].get<std::string>();
  EXPECT_NE(msg.find("rank-local partial sums, missing sum over group tp (all_reduce) before the output"),
            std::string::npos) << msg;
  EXPECT_NE(msg.find("closest D tensors: r0:y at "), std::string::npos) << msg;
  EXPECT_FALSE(j["failure"]["witness"]["closest_rebuild"].get<std::string>().empty()) << r.out;
  // The proven fix: the sum put back after the row-parallel matmul.
  std::string repair = j["failure"]["repair"].get<std::string>();
  EXPECT_EQ(repair.rfind("an all_reduce over group tp inserted after 'o' (", 0), 0u) << repair;
  EXPECT_NE(repair.find("mlp_tp2_missing_allreduce.sp:15:5)"), std::string::npos) << repair;
  for (const char* k : {"seconds", "seq_ops", "dist_ops", "lemmas_applied", "z3_queries", "peak_rss_mb"})
    EXPECT_TRUE(j["stats"].contains(k)) << k;
}

// With a concrete batch the witness runs at one row (README, "Smaller
// witnesses") and says so in the text and JSON reports; --no-shrink-witness
// runs it at full size.
TEST(CliVerify, ShrunkWitnessIsReportedAndCanBeTurnedOff) {
  auto dir = tempDir("shrunk");
  auto concreteCopy = [&](const std::string& name) {
    std::ifstream in(sourcePath("examples/" + name));
    std::stringstream ss;
    ss << in.rdbuf();
    std::string t = ss.str();
    // Rows enough for a witness worth shrinking (above 2e9 multiply-adds).
    for (size_t p; (p = t.find("batch")) != std::string::npos;) t.replace(p, 5, "32768");
    std::ofstream(dir / name) << t;
    return (dir / name).string();
  };
  std::vector<std::string> args{"verify", "--seq", concreteCopy("mlp.sp"), "--dist",
                                concreteCopy("mlp_tp2_missing_allreduce.sp"), "--relation",
                                sourcePath("examples/mlp_tp2.rel"), "--format", "json"};
  auto r = runCli(args);
  ASSERT_EQ(r.code, 1) << r.out << r.err;
  auto j = nlohmann::json::parse(r.out);
  std::string shrunk = j["failure"]["witness"]["shrunk"].get<std::string>();
  EXPECT_NE(shrunk.find("row dims of extent 32768 (x dim 0)"), std::string::npos) << shrunk;
  EXPECT_NE(std::find(j["assumptions"].begin(), j["assumptions"].end(), shrunk), j["assumptions"].end());
  args.push_back("--no-shrink-witness");
  auto full = runCli(args);
  ASSERT_EQ(full.code, 1) << full.out << full.err;
  EXPECT_TRUE(nlohmann::json::parse(full.out)["failure"]["witness"]["shrunk"].is_null()) << full.out;
  args.resize(args.size() - 3);  // text report
  auto text = runCli(args);
  EXPECT_NE(text.out.find("witness (seed 0, rows shrunk: see assumes)"), std::string::npos) << text.out;
}

TEST(CliVerify, JUnitAndDot) {
  auto dir = tempDir("junit");
  auto args = verifyArgs("mlp_tp2_missing_allreduce.sp");
  args.insert(args.end(), {"--format", "junit", "--dot", (dir / "f.dot").string()});
  auto r = runCli(args);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.out.find("<testsuite name=\"shardproof.verify.mlp\""), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("<failure type=\"refuted\""), std::string::npos) << r.out;
  std::string dot = slurp((dir / "f.dot").string());
  EXPECT_EQ(dot.rfind("digraph seq {", 0), 0u) << dot;
  EXPECT_NE(dot.find("color=red"), std::string::npos) << dot;
}

TEST(CliVerify, InferredRelationsAreWrittenAndReusable) {
  auto dir = tempDir("infer");
  std::string rel = (dir / "proposed.rel").string();
  auto r = runCli({"verify", "--seq", sourcePath("examples/mlp.sp"), "--dist", sourcePath("examples/mlp_tp2.sp"),
                   "--infer-relations", "--write-relations", rel});
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("input relations (inferred)"), std::string::npos);
  std::string text = slurp(rel);
  EXPECT_NE(text.find("dist[*].x = seq.x"), std::string::npos) << text;
  auto again = runCli({"verify", "--seq", sourcePath("examples/mlp.sp"), "--dist",
                       sourcePath("examples/mlp_tp2.sp"), "--relation", rel});
  EXPECT_EQ(again.code, 0) << again.out << again.err;
}

// --outputs names any S value: an intermediate is rebuilt from any D value
// (the activation g is the concat of the ranks' g), and an --expect line for
// it is checked like one for an output.
TEST(CliVerify, IntermediateValuesAreChecked) {
  auto args = verifyArgs("mlp_tp2.sp");
  args.insert(args.end(), {"--outputs", "g"});
  auto r = runCli(args);
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("seq.g = concat(dim=1, for r in tp: dist[r].g)"), std::string::npos) << r.out;
  auto dir = tempDir("expectg");
  std::ofstream((dir / "right.rel").string()) << "expect seq.g = concat(dim=1, for r in tp: dist[r].g)\n";
  std::ofstream((dir / "wrong.rel").string()) << "expect seq.g = concat(dim=1, dist[1].g, dist[0].g)\n";
  auto right = runCli({"verify", "--seq", sourcePath("examples/mlp.sp"), "--dist", sourcePath("examples/mlp_tp2.sp"),
                       "--relation", sourcePath("examples/mlp_tp2.rel"), "--outputs", "g", "--expect",
                       (dir / "right.rel").string()});
  EXPECT_EQ(right.code, 0) << right.out << right.err;
  auto wrong = runCli({"verify", "--seq", sourcePath("examples/mlp.sp"), "--dist", sourcePath("examples/mlp_tp2.sp"),
                       "--relation", sourcePath("examples/mlp_tp2.rel"), "--outputs", "g", "--expect",
                       (dir / "wrong.rel").string()});
  EXPECT_EQ(wrong.code, 1) << wrong.out << wrong.err;
  EXPECT_NE(wrong.out.find("verdict: refuted"), std::string::npos) << wrong.out;
}

TEST(CliVerify, BadArgumentsExitThree) {
  auto both = runCli({"verify", "--seq", sourcePath("examples/mlp.sp"), "--dist", sourcePath("examples/mlp_tp2.sp")});
  EXPECT_EQ(both.code, 3);
  EXPECT_NE(both.err.find("exactly one of --relation FILE and --infer-relations"), std::string::npos) << both.err;
  auto args = verifyArgs("mlp_tp2.sp");
  args.insert(args.end(), {"--outputs", "nope"});
  auto out = runCli(args);
  EXPECT_EQ(out.code, 3);
  EXPECT_NE(out.err.find("'nope' is not a value of"), std::string::npos) << out.err;
  auto seqAsDist = runCli({"verify", "--seq", sourcePath("examples/mlp.sp"), "--dist", sourcePath("examples/mlp.sp"),
                           "--infer-relations"});
  EXPECT_EQ(seqAsDist.code, 3);
  EXPECT_NE(seqAsDist.err.find("expected a distributed program"), std::string::npos) << seqAsDist.err;
}

// A refuted program whose all_reduce names the wrong group: the report
// names the edit under which D verifies (text and JSON); --repair-limit 0
// turns the search off; a negative limit is bad input.
TEST(CliVerify, RepairNamesTheVerifyingEdit) {
  const std::string dir = sourcePath("tests/verify/wrong-group");
  std::vector<std::string> args = {"verify", "--seq", dir + "/seq.sp", "--dist", dir + "/bug.sp",
                                   "--relation", dir + "/relations.rel"};
  auto text = runCli(args);
  EXPECT_EQ(text.code, 1) << text.out << text.err;
  EXPECT_NE(text.out.find("  repair: D verifies with all_reduce 'o' ("), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("bug.sp:13:5) over group tp instead of dp\n"), std::string::npos) << text.out;
  auto json = args;
  json.insert(json.end(), {"--format", "json"});
  auto j = nlohmann::json::parse(runCli(json).out);
  EXPECT_NE(j["failure"]["repair"].get<std::string>().find("over group tp instead of dp"), std::string::npos) << j;
  json.insert(json.end(), {"--repair-limit", "0"});
  j = nlohmann::json::parse(runCli(json).out);
  EXPECT_TRUE(j["failure"]["repair"].is_null()) << j;
  args.insert(args.end(), {"--repair-limit", "-1"});
  auto bad = runCli(args);
  EXPECT_EQ(bad.code, 3);
  EXPECT_NE(bad.err.find("--repair-limit must be non-negative"), std::string::npos) << bad.err;
}

// A witness whose tensors do not fit (2^28-element S tensors, 1 GiB each,
// under a 1.5 GB address-space limit): inconclusive with the reason, exit
// 2, never a crash.
TEST(CliVerify, WitnessOutOfMemoryIsInconclusive) {
  auto dir = tempDir("oom");
  const std::string n = "268435456", h = "134217728";
  std::ofstream(dir / "seq.sp") << "graph big {\n  input %x: f32[" + n + "]\n  %y: f32[" + n +
                                         "] = tanh(%x)\n  output %y\n}\n";
  std::ofstream(dir / "dist.sp") << "program big2 {\n  world 2\n  mesh [tp = 2]\n  rank 0..1 {\n    input %x: f32[" +
                                          h + "]\n    %t: f32[" + h + "] = tanh(%x)\n    %y: f32[" + h +
                                          "] = neg(%t)\n    output %y\n  }\n}\n";
  std::ofstream(dir / "r.rel") << "for r in tp: dist[r].x = slice(seq.x, dim=0, start=idx(r,tp)*" + h +
                                        ", end=(idx(r,tp)+1)*" + h +
                                        ")\nexpect seq.y = concat(dim=0, for r in tp: dist[r].y)\n";
  auto r = runCli({"verify", "--seq", (dir / "seq.sp").string(), "--dist", (dir / "dist.sp").string(), "--relation",
                   (dir / "r.rel").string(), "--repair-limit", "0"},
                  1500000);
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  EXPECT_NE(r.out.find("verdict: inconclusive"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("the witness ran out of memory"), std::string::npos) << r.out;
  std::filesystem::remove_all(dir);
}

// `run` on a valid program whose tensors do not fit (a 4 GiB input under a
// 1.5 GB address-space limit): one clear error and exit 3, never an
// uncaught bad_alloc, and no output written.
TEST(CliRun, OutOfMemoryIsOneClearError) {
  auto dir = tempDir("runoom");
  std::ofstream(dir / "big.sp") << "graph big {\n  input %x: f32[1073741824]\n  %y: f32[1073741824] = tanh(%x)\n"
                                   "  output %y\n}\n";
  auto r = runCli({"run", (dir / "big.sp").string(), "--out-dir", (dir / "o").string()}, 1500000);
  EXPECT_EQ(r.code, 3) << r.out << r.err;
  EXPECT_EQ(r.err, "error: run " + (dir / "big.sp").string() + ": out of memory (the model's tensors do not fit)\n");
  EXPECT_FALSE(std::filesystem::exists(dir / "o" / "y.npy"));
  std::filesystem::remove_all(dir);
}

// ---- wrong verdicts (tests/data/trust) ----

std::vector<std::string> trustArgs(const std::string& seq, const std::string& dist, const std::string& rel) {
  const std::string d = sourcePath("tests/data/trust/");
  return {"verify", "--seq", d + seq, "--dist", d + dist, "--relation", d + rel, "--repair-limit", "0"};
}

// Three ranks broadcasting on three two-rank groups in a cycle: every group
// pairs its collectives, but no rank can finish its first. verify used to
// say verified; it is refuted with the cycle, as `run` reports it.
TEST(CliTrust, GroupCycleDeadlockIsRefuted) {
  auto r = runCli(trustArgs("cycle_seq.sp", "cycle_dist.sp", "cycle.rel"));
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("verdict: refuted"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("deadlock: ranks 0 -> 1 -> 2 -> 0 wait for each other in a cycle"), std::string::npos)
      << r.out;
  auto junit = trustArgs("cycle_seq.sp", "cycle_dist.sp", "cycle.rel");
  junit.insert(junit.end(), {"--format", "junit"});
  auto j = runCli(junit);
  EXPECT_EQ(j.code, 1) << j.out << j.err;
  EXPECT_NE(j.out.find("<failure type=\"refuted\" message=\"D: deadlock: ranks 0 -&gt; 1"), std::string::npos) << j.out;
  auto run = runCli({"run", sourcePath("tests/data/trust/cycle_dist.sp"), "--out-dir",
                     tempDir("cycle").string()});
  EXPECT_EQ(run.code, 3) << run.out << run.err;
  EXPECT_NE(run.err.find("deadlock: ranks 0 -> 1 -> 2 -> 0 wait for each other in a cycle"), std::string::npos)
      << run.err;
}

// Two ranks meet at one all_reduce, one summing and one averaging: NCCL
// would mix them; the program is refuted naming both members (it was
// rejected as bad input, exit 3).
TEST(CliTrust, MismatchedCollectiveIsRefuted) {
  auto r = runCli(trustArgs("mismatch_seq.sp", "mismatch_dist.sp", "mismatch.rel"));
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("verdict: refuted"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("with reduce sum but rank 1 is at all_reduce 'y'"), std::string::npos) << r.out;
}

// Each rank floors its transposed column shard and outputs it flattened; S's
// transposed floor is rebuilt from those by reshape and concat, so D refines
// S. The witness used to refute it from its closest-rebuild guess at S's
// floor and from "no tensor of matching shape" at the output.
TEST(CliTrust, FlattenedFloorShardsAreNotRefuted) {
  auto r = runCli(trustArgs("floor_seq.sp", "floor_dist.sp", "floor.rel"));
  EXPECT_NE(r.code, 1) << r.out << r.err;
  EXPECT_EQ(r.out.find("verdict: refuted"), std::string::npos) << r.out;
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  EXPECT_NE(r.out.find("verdict: inconclusive"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("the witness has no value of D to compare with S output 'y'"), std::string::npos) << r.out;
}

// A reshape to [0] in a relation does not hold the 4 elements of seq.x: the
// relation is bad input (exit 3) naming the line, not a premise of a proof.
TEST(CliTrust, RelationReshapeToAnotherElementCountIsBadInput) {
  auto r = runCli(trustArgs("reshape_seq.sp", "reshape_dist.sp", "reshape_empty.rel"));
  EXPECT_EQ(r.code, 3) << r.out << r.err;
  EXPECT_EQ(r.out.find("verdict: verified"), std::string::npos) << r.out;
  EXPECT_EQ(r.err, "error: " + sourcePath("tests/data/trust/reshape_empty.rel") +
                       ":2: rank 0: relation of D input 'x': reshape [4] to [0]: element counts differ\n");
}

TEST(CliLemmas, ListsLibrary) {
  auto r = runCli({"lemmas"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("matmul-contract-split"), std::string::npos) << r.out;
}

TEST(CliLemmas, ProvesOne) {
  auto r = runCli({"lemmas", "--prove", "--only", "matmul-contract-split"});
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("proven"), std::string::npos) << r.out;
  auto bad = runCli({"lemmas", "--only", "no-such-lemma"});
  EXPECT_EQ(bad.code, 3);
}

TEST(CliInspect, MegatronCaptureFromSharedCorpus) {
  std::string corpus = std::string(SP_SOURCE_DIR) + "/../shared/corpus/megatron_gpt_tp2_l1";
  if (!std::filesystem::exists(corpus)) {
    const char* required = std::getenv("SP_REQUIRE_CORPUS");
    if (required && std::string(required) == "1") FAIL() << "shared corpus not found at " << corpus << " (SP_REQUIRE_CORPUS=1)";
    GTEST_SKIP() << "shared corpus not found at " << corpus;
  }
  auto r = runCli({"inspect", corpus + "/dist", "--format", "json"});
  ASSERT_EQ(r.code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["world_size"], 2);
  EXPECT_EQ(j["ranks"][0]["ops"]["all_reduce"], j["ranks"][1]["ops"]["all_reduce"]);
}

}  // namespace
}  // namespace sp::test

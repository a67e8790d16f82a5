// End-to-end tests of verify(): Megatron TP MLP, attention over a head
// split, sequence parallel, and their bugs. Every case also checks that S
// refines S and D refines D (a checker that proves everything fails these
// tests through the bug twins; one that proves nothing fails these).
#include <gtest/gtest.h>

#include <tuple>
#include <unistd.h>

#include <cmath>
#include <fstream>
#include <iostream>
#include <sstream>

#include "ir/text.h"
#include "rewrite/verify/verify.h"
#include "rewrite/verify/verify_test_util.h"

namespace sp::rewrite {
namespace {

namespace test {

using sp::rewrite::testutil::Case;
using sp::rewrite::testutil::load;
using sp::rewrite::testutil::readFile;

std::string describe(const VerifyReport& r) {
  std::string s = std::string(verdictName(r.verdict)) + ": " + r.reason;
  if (r.failure) s += " | at " + r.failure->seqOp + " (" + r.failure->seqValue + "): " + r.failure->message;
  for (const auto& o : r.outputs) s += " | " + o.name + " = " + o.relation;
  return s;
}

VerifyReport runCase(const Case& c) {
  VerifyOptions o;
  auto r = verify(c.seq, c.dist, c.rel, o);
  SP_ASSERT(r.ok(), r.ok() ? "" : r.error().str());
  std::cout << describe(*r) << "\n";
  return *r;
}

// S refines S: S as a one-rank program with replicated inputs and outputs.
void checkSelfRefinement(const Case& c) {
  std::string text = ir::printGraph(c.seq);
  auto brace = text.find('{');
  std::string body = text.substr(brace + 1);
  body = body.substr(0, body.rfind('}'));
  std::string prog = "program self {\n  world 1\n  rank 0 {" + body + "}\n}\n";
  auto p = ir::parseProgram(prog, "self.sp");
  ASSERT_TRUE(p.ok()) << p.error().str() << "\n" << prog;
  std::string rel;
  std::vector<ir::ValueId> leaves = c.seq.inputs();
  leaves.insert(leaves.end(), c.seq.params().begin(), c.seq.params().end());
  for (ir::ValueId v : leaves) rel += "dist[*]." + c.seq.value(v).name + " = seq." + c.seq.value(v).name + "\n";
  for (ir::ValueId v : c.seq.outputs()) rel += "expect seq." + c.seq.value(v).name + " = dist[0]." + c.seq.value(v).name + "\n";
  auto f = parseRelations(rel, "self.rel");
  ASSERT_TRUE(f.ok()) << f.error().str();
  auto r = verify(c.seq, *p, *f, {});
  ASSERT_TRUE(r.ok()) << r.error().str();
  EXPECT_EQ(r->verdict, Verdict::Verified) << "S does not refine S: " << describe(*r);
}

}  // namespace test


using test::Case;
using test::load;
using test::runCase;

TEST(Verify, MegatronTpMlpVerified) {
  Case c = load("mlp_seq.sp", "mlp_tp2.sp", "mlp_tp2.rel");
  auto rep = runCase(c);
  ASSERT_EQ(rep.verdict, Verdict::Verified) << test::describe(rep);
  ASSERT_EQ(rep.outputs.size(), 1u);
  EXPECT_EQ(rep.outputs[0].relation, "dist[0].y");
  EXPECT_GT(rep.stats.lemmasApplied, 0);
  test::checkSelfRefinement(c);
}

// The time limit covers proving the lemma library on a cold proof cache: a
// run cut short there is inconclusive and says why; it is never verified.
TEST(Verify, TimeLimitWhileProvingLibraryIsInconclusive) {
  Case c = load("mlp_seq.sp", "mlp_tp2.sp", "mlp_tp2.rel");
  VerifyOptions o;
  o.timeLimitSeconds = 1e-6;
  o.proofCacheDir = ::testing::TempDir() + "/sp-cold-cache-" + std::to_string(::getpid());
  auto r = verify(c.seq, c.dist, c.rel, o);
  ASSERT_TRUE(r.ok()) << r.error().str();
  EXPECT_EQ(r->verdict, Verdict::Inconclusive) << test::describe(*r);
  EXPECT_NE(r->reason.find("reached while proving the lemma library (0 of "), std::string::npos) << r->reason;
  EXPECT_TRUE(r->outputs.empty());
}

TEST(Verify, MegatronTpMlpWithoutExpectFindsRelation) {
  Case c = load("mlp_seq.sp", "mlp_tp2.sp", "mlp_tp2.rel");
  c.rel.outputs.clear();
  auto rep = runCase(c);
  ASSERT_EQ(rep.verdict, Verdict::Verified) << test::describe(rep);
  EXPECT_EQ(rep.outputs[0].relation, "dist[0].y");
}

TEST(Verify, MissingAllReduceRefuted) {
  Case c = load("mlp_seq.sp", "mlp_tp2_no_allreduce.sp", "mlp_tp2.rel");
  auto rep = runCase(c);
  ASSERT_EQ(rep.verdict, Verdict::Refuted) << test::describe(rep);
  ASSERT_TRUE(rep.failure.has_value());
  EXPECT_EQ(rep.failure->seqValue, "y");
  EXPECT_EQ(rep.failure->location.str(), "mlp.py:12");
  ASSERT_TRUE(rep.failure->witness.has_value());
  EXPECT_GT(rep.failure->witness->worstOutput.maxAbsErr, 0);
  EXPECT_NE(rep.failure->message.find("sum(dist[0].y, dist[1].y)"), std::string::npos) << rep.failure->message;
  test::checkSelfRefinement(c);
}

// After the first failure, outputs that do not depend on the failing value
// are walked on their own: the report gives their relations. The verdict
// and the failure stay the first walk's.
TEST(Verify, OutputsIndependentOfTheFailureKeepTheirRelations) {
  auto seq = ir::parseGraph(R"(graph two {
  input %x: f32[8, 16]
  param %w1: f32[16, 32]
  param %w2: f32[32, 16]
  param %w3: f32[16, 4]
  %h: f32[8, 32] = matmul(%x, %w1)
  %g: f32[8, 32] = gelu(%h)
  %y: f32[8, 16] = matmul(%g, %w2)
  %u: f32[8, 16] = gelu(%y)
  %z: f32[8, 4] = matmul(%x, %w3)
  output %u
  output %z
  output %y
})", "two.sp");
  auto dist = ir::parseProgram(R"(program two_tp2 {
  world 2
  mesh [tp = 2]
  rank 0..1 {
    input %x: f32[8, 16]
    param %w1: f32[16, 16]
    param %w2: f32[16, 16]
    param %w3: f32[16, 4]
    %h: f32[8, 16] = matmul(%x, %w1)
    %g: f32[8, 16] = gelu(%h)
    %y: f32[8, 16] = matmul(%g, %w2)
    %u: f32[8, 16] = gelu(%y)
    %z: f32[8, 4] = matmul(%x, %w3)
    output %u
    output %z
    output %y
  }
})", "two_tp2.sp");
  auto rel = parseRelations(R"(dist[*].x = seq.x
dist[*].w3 = seq.w3
for r in tp: dist[r].w1 = slice(seq.w1, dim=1, start=idx(r,tp)*16, end=(idx(r,tp)+1)*16)
for r in tp: dist[r].w2 = slice(seq.w2, dim=0, start=idx(r,tp)*16, end=(idx(r,tp)+1)*16)
)", "two.rel");
  ASSERT_TRUE(seq.ok() && dist.ok() && rel.ok());
  auto rep = verify(*seq, *dist, *rel, {});
  ASSERT_TRUE(rep.ok()) << rep.error().str();
  EXPECT_EQ(rep->verdict, Verdict::Refuted) << test::describe(*rep);
  ASSERT_TRUE(rep->failure.has_value());
  EXPECT_EQ(rep->failure->seqValue, "u") << test::describe(*rep);
  ASSERT_EQ(rep->outputs.size(), 3u);
  // u depends on the failing value: no relation. z does not: proven.
  EXPECT_EQ(rep->outputs[0].name, "u");
  EXPECT_FALSE(rep->outputs[0].expr) << rep->outputs[0].relation;
  EXPECT_EQ(rep->outputs[1].name, "z");
  ASSERT_TRUE(rep->outputs[1].expr) << test::describe(*rep);
  EXPECT_EQ(rep->outputs[1].relation.find("dist[") , 0u) << rep->outputs[1].relation;
  // y is the partial sums, rebuildable from D's outputs as a sum over tp.
  EXPECT_EQ(rep->outputs[2].name, "y");
  ASSERT_TRUE(rep->outputs[2].expr) << test::describe(*rep);
  EXPECT_NE(rep->outputs[2].relation.find("sum("), std::string::npos) << rep->outputs[2].relation;
}

// The average of the shards' means is the mean only for equal shards
// (reduce-mean-over-concat-halves needs equal sizes): with 3 and 5 columns
// it is refuted at the mean; with 4 and 4 (tests/verify/tp-reduction-modes)
// it verifies.
TEST(Verify, AverageOfUnequalShardMeansIsRefuted) {
  auto seq = ir::parseGraph(R"(graph m {
  input %x: f32[4, 8]
  %v: f32[4, 1] = reduce_mean(%x) {axes = [1], keepdims = 1}
  output %v
})", "m.sp");
  std::string rank = R"(
    input %x: f32[4, K]
    %vl: f32[4, 1] = reduce_mean(%x) {axes = [1], keepdims = 1}
    %v: f32[4, 1] = all_reduce(%vl) {group = "tp", reduce = "avg"}
    output %v
)";
  auto body = [&](const char* k) { return std::string(rank).replace(rank.find('K'), 1, k); };
  auto dist = ir::parseProgram("program m2 {\n  world 2\n  mesh [tp = 2]\n  rank 0 {" + body("3") + "  }\n  rank 1 {" +
                                   body("5") + "  }\n}\n",
                               "m2.sp");
  auto rel = parseRelations(
      "dist[0].x = slice(seq.x, dim=1, start=0, end=3)\ndist[1].x = slice(seq.x, dim=1, start=3, end=8)\n", "m.rel");
  ASSERT_TRUE(seq.ok() && dist.ok() && rel.ok());
  auto rep = verify(*seq, *dist, *rel, {});
  ASSERT_TRUE(rep.ok()) << rep.error().str();
  EXPECT_EQ(rep->verdict, Verdict::Refuted) << test::describe(*rep);
  ASSERT_TRUE(rep->failure.has_value());
  EXPECT_EQ(rep->failure->seqValue, "v");
}

// A D op that differs from S only in a float attribute, or downstream of a
// constant that differs: refuted, and the explanation names the D op or
// constant with both values.
TEST(Verify, ExplanationNamesADifferingAttributeOrConstant) {
  auto seq = ir::parseGraph(R"(graph n {
  input %x: f32[4, 8]
  %c: f32[] = constant() {value = dense<f32[], [0.5]>}
  %s: f32[4, 8] = mul(%x, %c)
  %y: f32[4, 8] = layer_norm(%s) {axis = 1, epsilon = 0.5}
  output %y
})", "n.sp");
  auto program = [](const char* c, const char* eps) {
    return ir::parseProgram(std::string(R"(program n2 {
  world 2
  mesh [tp = 2]
  rank 0..1 {
    input %x: f32[2, 8]
    %c: f32[] = constant() {value = dense<f32[], [)") + c + R"(]>}
    %s: f32[2, 8] = mul(%x, %c)
    %y: f32[2, 8] = layer_norm(%s) {axis = 1, epsilon = )" + eps + R"(}
    output %y
  }
})", "n2.sp");
  };
  auto rel = parseRelations(
      "for r in tp: dist[r].x = slice(seq.x, dim=0, start=idx(r,tp)*2, end=(idx(r,tp)+1)*2)\n"
      "expect seq.y = concat(dim=0, for r in tp: dist[r].y)\n", "n.rel");
  ASSERT_TRUE(seq.ok() && rel.ok()) << rel.error().str();
  auto same = program("0.5", "0.5");
  ASSERT_TRUE(same.ok()) << same.error().str();
  auto rep = verify(*seq, *same, *rel, {});
  ASSERT_TRUE(rep.ok()) << rep.error().str();
  EXPECT_EQ(rep->verdict, Verdict::Verified) << test::describe(*rep);
  for (auto [c, eps, says] : {std::tuple("0.5", "1.5", "D's layer_norm 'y' (n2.sp:8:5) has epsilon 1.5 where S's has 0.5"),
                              std::tuple("0.75", "0.5", "D's constant 'c' (n2.sp:6:5) is 0.75 where S's is 0.5")}) {
    auto dist = program(c, eps);
    ASSERT_TRUE(dist.ok()) << dist.error().str();
    rep = verify(*seq, *dist, *rel, {});
    ASSERT_TRUE(rep.ok()) << rep.error().str();
    EXPECT_EQ(rep->verdict, Verdict::Refuted) << test::describe(*rep);
    ASSERT_TRUE(rep->failure.has_value());
    EXPECT_NE(rep->failure->message.find(says), std::string::npos) << rep->failure->message;
  }
}

// Tokens split along the hidden dim (x's contracted dim) where the weight
// is split column-parallel: the shards do not pair up, and the explanation
// says which dims. Without an expect line and with no D output of y's
// shape, nothing of D is known to hold y: the witness's difference at h is
// a guess at a relation, so the verdict is inconclusive with that reason,
// not refuted.
TEST(Verify, MatmulShardsThatDoNotPairUpAreExplained) {
  auto seq = ir::parseGraph(R"(graph m {
  input %x: f32[8, 8]
  param %w: f32[8, 8]
  %h: f32[8, 8] = matmul(%x, %w)
  %y: f32[8, 8] = tanh(%h)
  output %y
})", "m.sp");
  auto dist = ir::parseProgram(R"(program m2 {
  world 2
  mesh [tp = 2]
  rank 0..1 {
    input %x: f32[8, 4]
    param %w: f32[8, 4]
    %xt: f32[4, 8] = transpose(%x) {perm = [1, 0]}
    %h: f32[4, 4] = matmul(%xt, %w)
    %y: f32[4, 4] = tanh(%h)
    output %y
  }
})", "m2.sp");
  auto rel = parseRelations(
      "for r in tp: dist[r].x = slice(seq.x, dim=1, start=idx(r,tp)*4, end=(idx(r,tp)+1)*4)\n"
      "for r in tp: dist[r].w = slice(seq.w, dim=1, start=idx(r,tp)*4, end=(idx(r,tp)+1)*4)\n", "m.rel");
  ASSERT_TRUE(seq.ok() && dist.ok() && rel.ok());
  auto rep = verify(*seq, *dist, *rel, {});
  ASSERT_TRUE(rep.ok()) << rep.error().str();
  EXPECT_EQ(rep->verdict, Verdict::Inconclusive) << test::describe(*rep);
  ASSERT_TRUE(rep->failure.has_value());
  EXPECT_EQ(rep->failure->seqValue, "h");
  EXPECT_NE(rep->failure->message.find("shards do not pair up: matmul 'h' contracts dim 1 of 'x', which D holds split "
                                       "over group tp, while 'w' is split along dim 1, not its contracted dim 0"),
            std::string::npos)
      << rep->failure->message;
  EXPECT_NE(rep->reason.find("the witness has no value of D to compare with S output 'y'"), std::string::npos)
      << rep->reason;
  EXPECT_NE(rep->reason.find("the closest rebuild at h differs, but that is a guess at a relation, not a refutation"),
            std::string::npos)
      << rep->reason;
}

// A dropout's mask (output 1), saved for backward, has the relation of the
// masked values: the dropout lemmas hold for the mask too. With rank 1
// drawing rank 0's stream slice, neither output is verified.
TEST(Verify, DropoutMaskOutputFollowsTheStreamLayout) {
  auto seq = ir::parseGraph(R"(graph drop {
  input %x: f32[8, 4]
  input %rng: f32[8, 4]
  %y: f32[8, 4], %m: bool[8, 4] = dropout(%x, %rng) {ratio = 0.1}
  output %y
  output %m
})", "drop.sp");
  auto dist = ir::parseProgram(R"(program drop_sp2 {
  world 2
  mesh [tp = 2]
  rank 0..1 {
    input %x: f32[4, 4]
    input %rng: f32[4, 4]
    %y: f32[4, 4], %m: bool[4, 4] = dropout(%x, %rng) {ratio = 0.1}
    output %y
    output %m
  }
})", "drop_sp2.sp");
  ASSERT_TRUE(seq.ok() && dist.ok());
  const std::string x = "for r in tp: dist[r].x = slice(seq.x, dim=0, start=idx(r,tp)*4, end=(idx(r,tp)+1)*4)\n";
  auto rel = parseRelations(x + "for r in tp: dist[r].rng = slice(seq.rng, dim=0, start=idx(r,tp)*4, end=(idx(r,tp)+1)*4)\n", "drop.rel");
  ASSERT_TRUE(rel.ok()) << rel.error().str();
  auto rep = verify(*seq, *dist, *rel, {});
  ASSERT_TRUE(rep.ok()) << rep.error().str();
  EXPECT_EQ(rep->verdict, Verdict::Verified) << test::describe(*rep);
  ASSERT_EQ(rep->outputs.size(), 2u);
  EXPECT_EQ(rep->outputs[1].relation, "concat(dim=0, dist[0].m, dist[1].m)");
  auto same = parseRelations(x + "dist[*].rng = slice(seq.rng, dim=0, start=0, end=4)\n", "same.rel");
  ASSERT_TRUE(same.ok()) << same.error().str();
  rep = verify(*seq, *dist, *same, {});
  ASSERT_TRUE(rep.ok()) << rep.error().str();
  EXPECT_NE(rep->verdict, Verdict::Verified) << test::describe(*rep);
  EXPECT_FALSE(rep->outputs[1].expr) << rep->outputs[1].relation;
}

TEST(Verify, PartialSumsIntoNonlinearOpLocalized) {
  Case c = load("mlp2_seq.sp", "mlp2_tp2_no_allreduce.sp", "mlp2_tp2.rel");
  auto rep = runCase(c);
  ASSERT_EQ(rep.verdict, Verdict::Refuted) << test::describe(rep);
  EXPECT_EQ(rep.failure->seqOp, "layer_norm 'n'");
  EXPECT_NE(rep.failure->message.find("rank-local partial sums"), std::string::npos) << rep.failure->message;
  EXPECT_NE(rep.failure->message.find("missing sum over group tp"), std::string::npos) << rep.failure->message;
  EXPECT_GT(rep.failure->witness->atLocalized.maxAbsErr, 0);
  test::checkSelfRefinement(c);
}

// The failure's closest D tensors: shape first (the gathered out), then
// the fewest D ops downstream of the D tensors its input relations name
// (bb, then cc), then the rest (aa), one entry per name.
TEST(Verify, ClosestDistTensorsByDistance) {
  Case c = load("closest_seq.sp", "closest_dist.sp", "closest.rel");
  auto rep = runCase(c);
  ASSERT_EQ(rep.verdict, Verdict::Refuted) << test::describe(rep);
  ASSERT_GE(rep.failure->closestDist.size(), 3u);
  const auto closest = strs(rep.failure->closestDist);
  EXPECT_EQ(std::vector<std::string>(closest.begin(), closest.begin() + 3),
            (std::vector<std::string>{"r0:out", "r0:bb", "r0:cc"}));
}

TEST(Verify, PartialSumsIntoNonlinearOpFixedTwinVerified) {
  Case c = load("mlp2_seq.sp", "mlp2_tp2.sp", "mlp2_tp2.rel");
  auto rep = runCase(c);
  ASSERT_EQ(rep.verdict, Verdict::Verified) << test::describe(rep);
}

TEST(Verify, AllGatherWhereAllReduceBelongsRefuted) {
  Case c = load("mlp_seq.sp", "mlp_tp2_allgather.sp", "mlp_tp2.rel");
  c.rel.outputs.clear();
  auto rep = runCase(c);
  ASSERT_EQ(rep.verdict, Verdict::Refuted) << test::describe(rep);
  EXPECT_EQ(rep.failure->seqValue, "y");
  test::checkSelfRefinement(c);
}

// With the expect line kept, D's gathered output has the wrong shape for
// it: refuted (not a bad-input error), the witness's output error infinite.
TEST(Verify, ExpectedRelationOfWrongShapeRefuted) {
  Case c = load("mlp_seq.sp", "mlp_tp2_allgather.sp", "mlp_tp2.rel");
  ASSERT_FALSE(c.rel.outputs.empty());
  auto rep = runCase(c);
  ASSERT_EQ(rep.verdict, Verdict::Refuted) << test::describe(rep);
  EXPECT_EQ(rep.failure->seqValue, "y");
  EXPECT_NE(rep.failure->message.find("D's outputs have the wrong shape"), std::string::npos) << rep.failure->message;
  ASSERT_TRUE(rep.failure->witness.has_value());
  EXPECT_TRUE(std::isinf(rep.failure->witness->worstOutput.maxAbsErr));
}

TEST(Verify, AllReduceWhereAllGatherBelongsRefuted) {
  Case c = load("col_seq.sp", "col_tp2_allreduce.sp", "col_tp2.rel");
  auto rep = runCase(c);
  ASSERT_EQ(rep.verdict, Verdict::Refuted) << test::describe(rep);
  EXPECT_EQ(rep.failure->seqValue, "h");
  test::checkSelfRefinement(c);
  Case fixed = load("col_seq.sp", "col_tp2.sp", "col_tp2.rel");
  auto ok = runCase(fixed);
  ASSERT_EQ(ok.verdict, Verdict::Verified) << test::describe(ok);
  EXPECT_EQ(ok.outputs[0].relation, "dist[0].h");
}

TEST(Verify, GatherOnWrongDimRefuted) {
  Case c = load("col_seq.sp", "col_tp2_wrong_dim.sp", "col_tp2.rel");
  auto rep = runCase(c);
  ASSERT_EQ(rep.verdict, Verdict::Refuted) << test::describe(rep);
  test::checkSelfRefinement(c);
}

// Lemma schemas: silu and sin on a rank-3 tensor split along dim 1 had no
// lemma (the per-op lemmas covered dims 0 and -1 of a few ops); the schema
// unary-over-concat covers every unary op and dim. Its buggy twins (gather
// on the wrong dim, no gather) stay refuted.
TEST(Verify, UnarySchemaOnMiddleDimVerified) {
  Case c = load("unary_seq.sp", "unary_tp2.sp", "unary_tp2.rel");
  auto rep = runCase(c);
  ASSERT_EQ(rep.verdict, Verdict::Verified) << test::describe(rep);
  EXPECT_EQ(rep.outputs[0].relation, "dist[0].y");
  test::checkSelfRefinement(c);
}

TEST(Verify, UnarySchemaGatherOnWrongDimRefuted) {
  for (const char* bug : {"unary_tp2_wrong_dim.sp", "unary_tp2_no_gather.sp"}) {
    Case c = load("unary_seq.sp", bug, "unary_tp2.rel");
    auto rep = runCase(c);
    ASSERT_EQ(rep.verdict, Verdict::Refuted) << bug << ": " << test::describe(rep);
    test::checkSelfRefinement(c);
  }
}

// Per rank, S's exp is D's all_gather output (one leaf), and the add after
// it needs the gathered shards: they go along as the value's partition
// (this was inconclusive without folding: "sum(dist[0].g, concat(...))").
// The twin adding exp(b) is refuted either way.
TEST(Verify, GatheredLeafKeepsItsShardsPerRank) {
  for (bool fold : {false, true}) {
    for (const char* d : {"gathered_beside_shards_tp4.sp", "gathered_beside_shards_tp4_bug.sp"}) {
      SCOPED_TRACE(std::string(d) + (fold ? " folded" : " per rank"));
      Case c = load("gathered_beside_shards_seq.sp", d, "gathered_beside_shards_tp4.rel");
      VerifyOptions o;
      o.fold = fold;
      auto rep = verify(c.seq, c.dist, c.rel, o);
      ASSERT_TRUE(rep.ok()) << rep.error().str();
      bool bug = std::string(d).find("_bug") != std::string::npos;
      EXPECT_EQ(rep->verdict, bug ? Verdict::Refuted : Verdict::Verified) << test::describe(*rep);
    }
  }
}

// An S input returned as an output, with an expected relation: checked
// against the input relations per rank as folded (it was "no relation
// found" per rank); an expected relation of another shape is refuted.
TEST(Verify, InputReturnedAsOutputMeetsItsExpectedRelation) {
  const std::string seq = "graph g {\n  input %x: f32[4, 3]\n  output %x\n}\n";
  const std::string dist =
      "program d {\n  world 2\n  mesh [tp = 2]\n  rank 0..1 {\n    input %x: f32[4, 3]\n    output %x\n  }\n}\n";
  for (bool fold : {false, true}) {
    SCOPED_TRACE(fold ? "folded" : "per rank");
    VerifyOptions o;
    o.fold = fold;
    auto ok = verifyTexts(seq, dist, "dist[*].x = seq.x\nexpect seq.x = dist[1].x\n", o);
    ASSERT_TRUE(ok.ok()) << ok.error().str();
    EXPECT_EQ(ok->verdict, Verdict::Verified) << test::describe(*ok);
    auto bad = verifyTexts(seq, dist, "dist[*].x = seq.x\nexpect seq.x = concat(dim=0, dist[0].x, dist[1].x)\n", o);
    ASSERT_TRUE(bad.ok()) << bad.error().str();
    EXPECT_NE(bad->verdict, Verdict::Verified) << test::describe(*bad);
  }
}

TEST(Verify, AttentionHeadSplitVerified) {
  Case c = load("attn_seq.sp", "attn_tp2.sp", "attn_tp2.rel");
  auto rep = runCase(c);
  ASSERT_EQ(rep.verdict, Verdict::Verified) << test::describe(rep);
  test::checkSelfRefinement(c);
}

TEST(Verify, SequenceParallelVerified) {
  Case c = load("mlp2_seq.sp", "mlp2_sp2.sp", "mlp2_sp2.rel");
  auto rep = runCase(c);
  ASSERT_EQ(rep.verdict, Verdict::Verified) << test::describe(rep);
  test::checkSelfRefinement(c);
}

TEST(Verify, PipelineSendRecvVerified) {
  Case c = load("pp_seq.sp", "pp2.sp", "pp2.rel");
  auto rep = runCase(c);
  ASSERT_EQ(rep.verdict, Verdict::Verified) << test::describe(rep);
  EXPECT_EQ(rep.outputs[0].relation, "dist[1].logits");
  test::checkSelfRefinement(c);
}

TEST(Verify, PipelineSendsWrongTensorRefuted) {
  Case c = load("pp_seq.sp", "pp2_wrong_tensor.sp", "pp2.rel");
  auto rep = runCase(c);
  ASSERT_EQ(rep.verdict, Verdict::Refuted) << test::describe(rep);
  EXPECT_EQ(rep.failure->seqValue, "logits");
  EXPECT_GT(rep.failure->witness->worstOutput.maxRelErr, 1e-3);
}

// Not a timing assertion: prints CSV (tp, hidden, seconds, lemmas) for the
// Megatron MLP at growing tensor-parallel degree, like a benchmark.
TEST(VerifyTiming, MegatronMlpScalingCsv) {
  std::cout << "tp,tokens,hidden,ffn,verdict,seconds,lemmas_applied\n";
  for (int tp : {2, 4, 8}) {
    int tokens = 512, hidden = 768, ffn = 3072, local = ffn / tp;
    std::string s = "graph mlp {\n  input %x: f32[" + std::to_string(tokens) + ", " + std::to_string(hidden) +
                    "]\n  param %w1: f32[" + std::to_string(hidden) + ", " + std::to_string(ffn) +
                    "]\n  param %w2: f32[" + std::to_string(ffn) + ", " + std::to_string(hidden) +
                    "]\n  %h = matmul(%x, %w1)\n  %g = gelu(%h) {approximate = \"tanh\"}\n  %y = matmul(%g, %w2)\n"
                    "  %n = layer_norm(%y)\n  output %n\n}\n";
    std::string d = "program mlp_tp {\n  world " + std::to_string(tp) + "\n  mesh [tp = " + std::to_string(tp) +
                    "]\n  rank 0.." + std::to_string(tp - 1) + " {\n    input %x: f32[" + std::to_string(tokens) + ", " +
                    std::to_string(hidden) + "]\n    param %w1: f32[" + std::to_string(hidden) + ", " +
                    std::to_string(local) + "]\n    param %w2: f32[" + std::to_string(local) + ", " +
                    std::to_string(hidden) + "]\n    %h = matmul(%x, %w1)\n    %g = gelu(%h) {approximate = \"tanh\"}\n"
                    "    %o = matmul(%g, %w2)\n    %y = all_reduce(%o) {group = \"tp\"}\n    %n = layer_norm(%y)\n"
                    "    output %n\n  }\n}\n";
    auto g = ir::parseGraph(s, "mlp.sp");
    auto p = ir::parseProgram(d, "mlp_tp.sp");
    ASSERT_TRUE(g.ok()) << g.error().str();
    ASSERT_TRUE(p.ok()) << p.error().str();
    auto f = inferRelations(*g, *p);
    ASSERT_TRUE(f.ok()) << f.error().str();
    auto r = verify(*g, *p, *f, {});
    ASSERT_TRUE(r.ok()) << r.error().str();
    EXPECT_EQ(r->verdict, Verdict::Verified) << test::describe(*r);
    std::cout << tp << "," << tokens << "," << hidden << "," << ffn << "," << verdictName(r->verdict) << ","
              << r->stats.seconds << "," << r->stats.lemmasApplied << "\n";
  }
}

TEST(Verify, MissingInputRelationIsAnError) {
  Case c = load("mlp_seq.sp", "mlp_tp2.sp", "mlp_tp2.rel");
  c.rel.inputs.pop_back();
  VerifyOptions o;
  auto rep = verify(c.seq, c.dist, c.rel, o);
  ASSERT_FALSE(rep.ok());
  EXPECT_EQ(rep.error().id, "missing-input-relation");
  EXPECT_EQ(rep.error().message, "rank 0: no relation for D parameter 'w2'");
}

TEST(InferRelations, ProposesMegatronLayout) {
  Case c = load("mlp_seq.sp", "mlp_tp2.sp", "mlp_tp2.rel");
  auto f = inferRelations(c.seq, c.dist);
  ASSERT_TRUE(f.ok()) << f.error().str();
  EXPECT_EQ(printRelations(*f),
            "dist[*].x = seq.x\n"
            "for r in tp: dist[r].w1 = slice(seq.w1, dim=1, start=idx(r,tp)*16, end=(idx(r,tp)+1)*16)\n"
            "for r in tp: dist[r].w2 = slice(seq.w2, dim=0, start=idx(r,tp)*16, end=(idx(r,tp)+1)*16)\n");
  // The proposal verifies like the hand-written file.
  c.rel = *f;
  auto rep = runCase(c);
  EXPECT_EQ(rep.verdict, Verdict::Verified) << test::describe(rep);
}

// Repair search: an all_gather along the wrong dim is refuted, and with a
// repair budget the report names the edit under which D verifies; without
// a budget, none. A dropped all_reduce before an output: the sum inserted
// there, the output keeping its name (the one the expected relation reads).
TEST(Repair, WrongGatherDimNamesTheVerifyingEdit) {
  Case c = load("col_seq.sp", "col_tp2_wrong_dim.sp", "col_tp2.rel");
  VerifyOptions o;
  auto plain = verify(c.seq, c.dist, c.rel, o);
  ASSERT_TRUE(plain.ok()) << plain.error().str();
  ASSERT_EQ(plain->verdict, Verdict::Refuted) << test::describe(*plain);
  EXPECT_TRUE(plain->failure->repair.empty()) << plain->failure->repair;
  o.repairSeconds = 30;
  auto rep = verify(c.seq, c.dist, c.rel, o);
  ASSERT_TRUE(rep.ok()) << rep.error().str();
  ASSERT_EQ(rep->verdict, Verdict::Refuted) << test::describe(*rep);
  EXPECT_EQ(rep->failure->repair, "all_gather 'hg' (col_tp2_wrong_dim.sp:8:5) along dim 1 instead of 0");
  Case dropped = load("mlp_seq.sp", "mlp_tp2_no_allreduce.sp", "mlp_tp2.rel");
  rep = verify(dropped.seq, dropped.dist, dropped.rel, o);
  ASSERT_TRUE(rep.ok()) << rep.error().str();
  ASSERT_EQ(rep->verdict, Verdict::Refuted) << test::describe(*rep);
  EXPECT_EQ(rep->failure->repair.rfind("an all_reduce over group tp inserted after 'y' (", 0), 0u)
      << rep->failure->repair;
}

// `c` verified (and by rank folding), and `twin` refuted with a repair
// budget: its report.
VerifyReport foldsAndTwinRefuted(const Case& c, const Case& twin) {
  VerifyOptions o;
  auto ok = verify(c.seq, c.dist, c.rel, o);
  EXPECT_TRUE(ok.ok()) << ok.error().str();
  if (ok.ok()) {
    EXPECT_EQ(ok->verdict, Verdict::Verified) << test::describe(*ok);
    bool folded = false;
    for (const auto& a : ok->assumptions) folded = folded || a.find("ranks folded") != std::string::npos;
    EXPECT_TRUE(folded) << test::describe(*ok);
  }
  o.repairSeconds = 30;
  auto rep = verify(twin.seq, twin.dist, twin.rel, o);
  EXPECT_TRUE(rep.ok()) << rep.error().str();
  if (!rep.ok()) return {};
  EXPECT_EQ(rep->verdict, Verdict::Refuted) << test::describe(*rep);
  return *rep;
}

// Symbolic batch and seq (a dynamic export): the reshapes to batch*seq rows
// and into heads are grouped by their monomials, so the TP 4 MLP verifies
// folded; without its all_reduce it is refuted, with the proven repair: a
// sum right after 'p', the D value the partial sums reach the output as
// (Failure::sumOrigins; 'y' is its identity).
TEST(Verify, SymbolicDimsFold) {
  auto rep = foldsAndTwinRefuted(load("sym_mlp_seq.sp", "sym_mlp_tp4.sp", "sym_mlp_tp4.rel"),
                                 load("sym_mlp_seq.sp", "sym_mlp_tp4_no_allreduce.sp", "sym_mlp_tp4.rel"));
  ASSERT_TRUE(rep.failure);
  ASSERT_FALSE(rep.failure->sumOrigins.empty());
  EXPECT_EQ(rep.failure->sumOrigins[0], (DistRef{0, "p"}));
  EXPECT_EQ(rep.failure->repair.rfind("an all_reduce over group tp inserted after 'p' (", 0), 0u) << rep.failure->repair;
}

// A sequence-parallel MLP whose ranks cut their own rows out of the
// row-parallel partial sums (a slice in place of the reduce_scatter), at
// TP 4 and 8, folded and per rank: refuted, and the repair is the
// reduce_scatter in place of that slice (the per-rank explanation names
// where the partial sums begin, as the fold does: Failure::sumOrigins).
TEST(Verify, SliceOfPartialSumsIsRepairedByAReduceScatter) {
  for (int tp : {4, 8})
    for (bool fold : {true, false}) {
      const int rows = 2, s = rows * tp;
      auto S = ir::parseGraph("graph g {\n  input %x: f32[" + std::to_string(s) + ", 8]\n  param %w1: f32[8, " +
                                  std::to_string(4 * tp) + "]\n  param %w2: f32[" + std::to_string(4 * tp) +
                                  ", 8]\n  %h: f32[" + std::to_string(s) + ", " + std::to_string(4 * tp) +
                                  "] = matmul(%x, %w1)\n  %g: f32[" + std::to_string(s) + ", " + std::to_string(4 * tp) +
                                  "] = gelu(%h)\n  %y: f32[" + std::to_string(s) +
                                  ", 8] = matmul(%g, %w2)\n  %z: f32[" + std::to_string(s) +
                                  ", 8] = add(%y, %x)\n  output %z\n}\n",
                              "seq.sp");
      ASSERT_TRUE(S.ok()) << S.error().str();
      auto D = ir::parseProgram(
          "program d {\n  world " + std::to_string(tp) + "\n  mesh [tp = " + std::to_string(tp) + "]\n  rank 0.." +
              std::to_string(tp - 1) + " {\n    input %x: f32[2, 8]\n    param %w1: f32[8, 4]\n    param %w2: f32[4, 8]\n" +
              "    %xa: f32[" + std::to_string(s) + ", 8] = all_gather(%x) {group = \"tp\", dim = 0}\n    %h: f32[" +
              std::to_string(s) + ", 4] = matmul(%xa, %w1)\n    %g: f32[" + std::to_string(s) +
              ", 4] = gelu(%h)\n    %p: f32[" + std::to_string(s) + ", 8] = matmul(%g, %w2)\n" +
              "    %y: f32[2, 8] = slice(%p) {starts = [0], ends = [2], axes = [0]}\n" +
              "    %z: f32[2, 8] = add(%y, %x)\n    output %z\n  }\n}\n",
          "twin.sp");
      ASSERT_TRUE(D.ok()) << D.error().str();
      auto R = parseRelations(
          "for r in tp: dist[r].x = slice(seq.x, dim=0, start=idx(r,tp)*2, end=(idx(r,tp)+1)*2)\n"
          "for r in tp: dist[r].w1 = slice(seq.w1, dim=1, start=idx(r,tp)*4, end=(idx(r,tp)+1)*4)\n"
          "for r in tp: dist[r].w2 = slice(seq.w2, dim=0, start=idx(r,tp)*4, end=(idx(r,tp)+1)*4)\n"
          "expect seq.z = concat(dim=0, for r in tp: dist[r].z)\n",
          "twin.rel");
      ASSERT_TRUE(R.ok()) << R.error().str();
      VerifyOptions o;
      o.fold = fold;
      o.repairSeconds = 30;
      auto rep = verify(*S, *D, *R, o);
      ASSERT_TRUE(rep.ok()) << rep.error().str();
      ASSERT_EQ(rep->verdict, Verdict::Refuted) << test::describe(*rep);
      ASSERT_TRUE(rep->failure);
      EXPECT_EQ(rep->failure->repair.rfind("a reduce_scatter over group tp along dim 0 in place of slice 'y'", 0), 0u)
          << "tp " << tp << (fold ? " folded: " : " per rank: ") << rep->failure->repair << "\n"
          << test::describe(*rep);
    }
}

// Context-parallel attention in online-softmax form (ring attention,
// flash attention's blockwise merge, split-KV decoding): each rank holds
// its query rows, gathers the keys and values, attends to each key block
// with the block's own row maxima and sums, and merges the blocks by
// rescaling to the running maximum, dividing last: in order, pairwise as a
// tree, or all at once to one global maximum (split-KV decoding). Verified
// at CP 2 and 3, each merge one step of online_softmax.rules' merge lemmas;
// a merge that forgets to rescale the running output, rescales with a
// stale maximum or reads the wrong value block is refuted.
// blocks: key blocks (default cp); at cp 1 the one rank holds all keys
// and values (flash attention's blockwise loop on one device).
std::string ringAttention(int cp, int heads, int len, int dim, const std::string& bug,
                          const std::string& order = "chain", int blocks = 0) {
  if (blocks == 0) blocks = cp;
  const int S = blocks * len;
  auto sh = [](std::initializer_list<int> d) {
    std::string out = "f32[";
    for (int x : d) out += (out.size() > 4 ? ", " : "") + std::to_string(x);
    return out + "]";
  };
  const std::string blk = sh({heads, len, dim}), row = sh({heads, len, 1}), sq = sh({heads, len, len});
  std::string b = "program ring {\n  world " + std::to_string(cp) + "\n  mesh [cp = " + std::to_string(cp) +
                  "]\n  rank 0.." + std::to_string(cp - 1) + " {\n";
  b += "    input %q: " + blk + "\n";
  if (cp == 1) {
    for (const char* n : {"k", "v"}) b += "    input %" + std::string(n) + "a: " + sh({heads, S, dim}) + "\n";
  } else {
    for (const char* n : {"k", "v"}) b += "    input %" + std::string(n) + ": " + blk + "\n";
    b += "    %ka: " + sh({heads, S, dim}) + " = all_gather(%k) {group = \"cp\", dim = 1}\n";
    b += "    %va: " + sh({heads, S, dim}) + " = all_gather(%v) {group = \"cp\", dim = 1}\n";
  }
  b += "    %c: f32[] = constant() {value = dense<f32[], [0.25]>}\n";
  for (int j = 0; j < blocks; ++j) {
    const std::string J = std::to_string(j);
    const int vj = bug == "wrong-v-block" ? (j + 1) % blocks : j;
    auto cut = [&](int at) { return "{starts = [" + std::to_string(at * len) + "], ends = [" + std::to_string((at + 1) * len) + "], axes = [1]}"; };
    b += "    %k" + J + ": " + blk + " = slice(%ka) " + cut(j) + "\n";
    b += "    %v" + J + ": " + blk + " = slice(%va) " + cut(vj) + "\n";
    b += "    %kt" + J + ": " + sh({heads, dim, len}) + " = transpose(%k" + J + ") {perm = [0, 2, 1]}\n";
    b += "    %s" + J + ": " + sq + " = matmul(%q, %kt" + J + ")\n";
    b += "    %ss" + J + ": " + sq + " = mul(%s" + J + ", %c)\n";
    b += "    %m" + J + ": " + row + " = reduce_max(%ss" + J + ") {axes = [2]}\n";
    b += "    %d" + J + ": " + sq + " = sub(%ss" + J + ", %m" + J + ")\n";
    b += "    %e" + J + ": " + sq + " = exp(%d" + J + ")\n";
    b += "    %l" + J + ": " + row + " = reduce_sum(%e" + J + ") {axes = [2]}\n";
    b += "    %o" + J + ": " + blk + " = matmul(%e" + J + ", %v" + J + ")\n";
  }
  // Merges: "chain" folds the blocks in order into a running state,
  // "tree" merges neighbours pairwise, level by level; "flat" takes one
  // maximum over every block, rescales each block to it and adds them up.
  struct State { std::string m, o, l; };
  int n = 0;
  auto merge = [&](const State& a, const State& c, bool last) {
    const std::string N = std::to_string(n++);
    b += "    %M" + N + ": " + row + " = max(%" + a.m + ", %" + c.m + ")\n";
    b += "    %da" + N + ": " + row + " = sub(%" + a.m + ", %M" + N + ")\n";
    b += "    %fa" + N + ": " + row + " = exp(%da" + N + ")\n";
    b += "    %db" + N + ": " + row + " = sub(%" + (bug == "stale-max" ? a.m : c.m) + ", %M" + N + ")\n";
    b += "    %fb" + N + ": " + row + " = exp(%db" + N + ")\n";
    b += "    %Oa" + N + ": " + blk + (bug == "no-rescale" && last ? " = identity(%" + a.o + ")\n" : " = mul(%" + a.o + ", %fa" + N + ")\n");
    b += "    %Ob" + N + ": " + blk + " = mul(%" + c.o + ", %fb" + N + ")\n";
    b += "    %O" + N + ": " + blk + " = add(%Oa" + N + ", %Ob" + N + ")\n";
    b += "    %La" + N + ": " + row + " = mul(%" + a.l + ", %fa" + N + ")\n";
    b += "    %Lb" + N + ": " + row + " = mul(%" + c.l + ", %fb" + N + ")\n";
    b += "    %L" + N + ": " + row + " = add(%La" + N + ", %Lb" + N + ")\n";
    return State{"M" + N, "O" + N, "L" + N};
  };
  std::vector<State> states;
  for (int j = 0; j < blocks; ++j) states.push_back({"m" + std::to_string(j), "o" + std::to_string(j), "l" + std::to_string(j)});
  std::string O, L;
  if (order == "chain") {
    State s = states[0];
    for (int j = 1; j < blocks; ++j) s = merge(s, states[size_t(j)], j == blocks - 1);
    O = s.o, L = s.l;
  } else if (order == "tree") {
    while (states.size() > 1) {
      std::vector<State> next;
      for (size_t i = 0; i + 1 < states.size(); i += 2) next.push_back(merge(states[i], states[i + 1], states.size() == 2));
      if (states.size() % 2) next.push_back(states.back());
      states = next;
    }
    O = states[0].o, L = states[0].l;
  } else {  // flat
    std::string G = "m0";
    for (int j = 1; j < blocks; ++j) {
      b += "    %G" + std::to_string(j) + ": " + row + " = max(%" + G + ", %m" + std::to_string(j) + ")\n";
      G = "G" + std::to_string(j);
    }
    for (int j = 0; j < blocks; ++j) {
      const std::string J = std::to_string(j);
      b += "    %dg" + J + ": " + row + " = sub(%" + (bug == "stale-max" && j > 0 ? "m0" : "m" + J) + ", %" + G + ")\n";
      b += "    %fg" + J + ": " + row + " = exp(%dg" + J + ")\n";
      b += "    %og" + J + ": " + blk + (bug == "no-rescale" && j == blocks - 1 ? " = identity(%o" + J + ")\n" : " = mul(%o" + J + ", %fg" + J + ")\n");
      b += "    %lg" + J + ": " + row + " = mul(%l" + J + ", %fg" + J + ")\n";
      if (j == 0) {
        O = "og0", L = "lg0";
        continue;
      }
      b += "    %Os" + J + ": " + blk + " = add(%" + O + ", %og" + J + ")\n";
      b += "    %Ls" + J + ": " + row + " = add(%" + L + ", %lg" + J + ")\n";
      O = "Os" + J, L = "Ls" + J;
    }
  }
  b += "    %o: " + blk + " = div(%" + O + ", %" + L + ")\n    output %o\n  }\n}\n";
  return b;
}

// S's attention over q rows and k / v rows (a scaled softmax of q k^T, times v).
Result<ir::Graph> attentionSeq(int heads, int qRows, int kRows, int dim) {
  auto sh = [&](int a, int b) { return "f32[" + std::to_string(heads) + ", " + std::to_string(a) + ", " + std::to_string(b) + "]"; };
  return ir::parseGraph("graph attn {\n  input %q: " + sh(qRows, dim) + "\n  input %k: " + sh(kRows, dim) +
                            "\n  input %v: " + sh(kRows, dim) + "\n  %kt: " + sh(dim, kRows) +
                            " = transpose(%k) {perm = [0, 2, 1]}\n  %s: " + sh(qRows, kRows) +
                            " = matmul(%q, %kt)\n  %c: f32[] = constant() {value = dense<f32[], [0.25]>}\n  %ss: " +
                            sh(qRows, kRows) + " = mul(%s, %c)\n  %p: " + sh(qRows, kRows) + " = softmax(%ss)\n  %o: " +
                            sh(qRows, dim) + " = matmul(%p, %v)\n  output %o\n}\n",
                        "attn.sp");
}

TEST(Verify, RingAttentionOnlineSoftmaxMerge) {
  const int heads = 2, len = 3, dim = 4;
  for (int cp : {2, 3}) {
    auto seq = attentionSeq(heads, cp * len, cp * len, dim);
    ASSERT_TRUE(seq.ok()) << seq.error().str();
    std::string relText;
    for (const char* n : {"q", "k", "v"})
      relText += "for r in cp: dist[r]." + std::string(n) + " = slice(seq." + n + ", dim=1, start=idx(r,cp)*" +
                 std::to_string(len) + ", end=(idx(r,cp)+1)*" + std::to_string(len) + ")\n";
    relText += "expect seq.o = concat(dim=1, for r in cp: dist[r].o)\n";
    auto rel = parseRelations(relText, "ring.rel");
    ASSERT_TRUE(rel.ok()) << rel.error().str();
    for (const std::string order : {"chain", "tree", "flat"})
      for (const std::string bug : {"", "no-rescale", "stale-max", "wrong-v-block"}) {
        if (order != "chain" && bug == "wrong-v-block") continue;  // the blocks are made alike in every order
        SCOPED_TRACE("cp " + std::to_string(cp) + " " + order + " " + (bug.empty() ? "correct" : bug));
        auto dist = ir::parseProgram(ringAttention(cp, heads, len, dim, bug, order), "ring.sp");
        ASSERT_TRUE(dist.ok()) << dist.error().str();
        auto rep = verify(*seq, *dist, *rel, VerifyOptions{});
        ASSERT_TRUE(rep.ok()) << rep.error().str();
        EXPECT_EQ(rep->verdict, bug.empty() ? Verdict::Verified : Verdict::Refuted) << test::describe(*rep);
        if (bug.empty() && order == "chain") test::checkSelfRefinement(Case{*seq, *dist, *rel});
      }
  }
}

// Flash attention's blockwise loop on one device: 4 and 5 key blocks,
// merged in order, as a tree or to one maximum. The merged state is more
// compute ops from the inputs than the first exploration's hops (a chain
// of 4 merges passes 12): the search goes deeper where it saturated short
// of the goal with D left beyond the hop limit (was inconclusive for the
// tree). A stale maximum or a missing rescale is refuted.
TEST(Verify, BlockwiseAttentionMergedDeeperThanTheFirstExploration) {
  const int heads = 1, len = 2, dim = 4;
  for (int blocks : {4, 5}) {
    auto seq = attentionSeq(heads, len, blocks * len, dim);
    ASSERT_TRUE(seq.ok()) << seq.error().str();
    auto rel = parseRelations("dist[0].q = seq.q\ndist[0].ka = seq.k\ndist[0].va = seq.v\nexpect seq.o = dist[0].o\n", "b.rel");
    ASSERT_TRUE(rel.ok()) << rel.error().str();
    for (const std::string order : {"chain", "tree", "flat"})
      for (const std::string bug : {"", "stale-max", "no-rescale"}) {
        SCOPED_TRACE(std::to_string(blocks) + " blocks " + order + " " + (bug.empty() ? "correct" : bug));
        auto dist = ir::parseProgram(ringAttention(1, heads, len, dim, bug, order, blocks), "blockwise.sp");
        ASSERT_TRUE(dist.ok()) << dist.error().str();
        auto rep = verify(*seq, *dist, *rel, VerifyOptions{});
        ASSERT_TRUE(rep.ok()) << rep.error().str();
        EXPECT_EQ(rep->verdict, bug.empty() ? Verdict::Verified : Verdict::Refuted) << test::describe(*rep);
      }
  }
}

// A transpose that moves only dims of extent 1 is a reshape (the elements
// keep their row-major order): S transposes [1, 6, 4] to [6, 1, 4] where D
// reshapes, and the other way round, at any order of the unit dims. A
// transpose that also swaps two dims of extent > 1 is another tensor than
// the reshape: refuted.
TEST(Verify, TransposeOfUnitDimsIsAReshape) {
  struct Form { std::string in, out, perm; bool same; };
  for (const Form& f : {Form{"1, 6, 4", "6, 1, 4", "[1, 0, 2]", true}, Form{"6, 1, 4", "6, 4, 1", "[0, 2, 1]", true},
                        Form{"1, 6, 1, 4", "6, 1, 4, 1", "[1, 2, 3, 0]", true},
                        Form{"2, 1, 3", "3, 1, 2", "[2, 1, 0]", false}})
    for (bool seqTransposes : {true, false}) {
      SCOPED_TRACE(f.in + " perm " + f.perm + (seqTransposes ? " in S" : " in D"));
      const std::string tr = "transpose(%x) {perm = " + f.perm + "}", rs = "reshape(%x) {shape = [" + f.out + "]}";
      auto seq = ir::parseGraph("graph s {\n  input %x: f32[" + f.in + "]\n  %y: f32[" + f.out + "] = " +
                                    (seqTransposes ? tr : rs) + "\n  %z: f32[" + f.out + "] = tanh(%y)\n  output %z\n}\n",
                                "s.sp");
      ASSERT_TRUE(seq.ok()) << seq.error().str();
      auto dist = ir::parseProgram("program d {\n  world 2\n  rank 0..1 {\n    input %x: f32[" + f.in + "]\n    %y: f32[" +
                                       f.out + "] = " + (seqTransposes ? rs : tr) + "\n    %z: f32[" + f.out +
                                       "] = tanh(%y)\n    output %z\n  }\n}\n",
                                   "d.sp");
      ASSERT_TRUE(dist.ok()) << dist.error().str();
      auto rel = parseRelations("for r in 0..1: dist[r].x = seq.x\nexpect seq.z = dist[0].z\n", "t.rel");
      ASSERT_TRUE(rel.ok()) << rel.error().str();
      auto rep = verify(*seq, *dist, *rel, VerifyOptions{});
      ASSERT_TRUE(rep.ok()) << rep.error().str();
      EXPECT_EQ(rep->verdict, f.same ? Verdict::Verified : Verdict::Refuted) << test::describe(*rep);
    }
}

// Partial sums of two row-parallel products, added, then read by a bias
// add (through a neg) and by a gelu, with no all_reduce (TP 16, so rank
// folding localizes it at the bias add, reading 't'). A sum after 't'
// mends the add but not the gelu; the repair search walks back to where
// the partial sums began (the two products) and puts the sum where they
// join, after 's', under which D verifies.
TEST(Repair, SumGoesWhereThePartialSumsJoin) {
  auto rep = foldsAndTwinRefuted(load("branches_seq.sp", "branches_tp16.sp", "branches_tp16.rel"),
                                 load("branches_seq.sp", "branches_tp16_no_allreduce.sp", "branches_tp16.rel"));
  ASSERT_TRUE(rep.failure);
  EXPECT_NE(rep.failure->message.find("D's 't' holds partial sums over group tp"), std::string::npos)
      << rep.failure->message;
  EXPECT_TRUE(rep.failure->foldLocalized);
  EXPECT_EQ(strs(rep.failure->sumOrigins), (std::vector<std::string>{"r0:s", "r0:p1", "r0:p2"}));
  EXPECT_EQ(rep.failure->repair.rfind("an all_reduce over group tp inserted after 's' (", 0), 0u) << rep.failure->repair;
}

// A merged projection (vLLM's QKV, GPT-2's c_attn): S splits the matmul's
// output features into blocks, and each rank holds its shard of every
// block. The cut points of the weight's output dim in S and in D give the
// blocks; at TP 4 the second and third blocks (k and v, 4 units each, 2
// per rank) have fewer shards than ranks and are held by consecutive
// ranks, as KV heads are when TP exceeds them. Cut points that fit neither
// layout ask for a relation file.
std::string mergedSeq() {
  return "graph s {\n  input %x: f32[3, 8]\n  param %w: f32[8, 16]\n"
         "  %h: f32[3, 16] = matmul(%x, %w)\n"
         "  %q, %k, %v = split(%h) {axis = 1, sizes = [8, 4, 4]}\n"
         "  %a: f32[3, 4] = add(%k, %v)\n"
         "  %t: f32[3, 4] = tanh(%a)\n"
         "  output %q\n  output %t\n}\n";
}

std::string mergedDist(int tp, int q, int kv, const std::string& splitSizes) {
  std::string n = std::to_string(tp), w = std::to_string(q + 2 * kv);
  return "program d {\n  world " + n + "\n  mesh [tp = " + n + "]\n  rank 0.." + std::to_string(tp - 1) +
         " {\n    input %x: f32[3, 8]\n    param %w: f32[8, " + w + "]\n    %h: f32[3, " + w +
         "] = matmul(%x, %w)\n    %q, %k, %v = split(%h) {axis = 1, sizes = " + splitSizes + "}\n"
         "    %a: f32[3, " + std::to_string(kv) + "] = add(%k, %v)\n"
         "    %t: f32[3, " + std::to_string(kv) + "] = tanh(%a)\n"
         "    output %q\n    output %t\n  }\n}\n";
}

TEST(InferRelations, MergedProjectionsAreShardedPerBlock) {
  auto seq = ir::parseGraph(mergedSeq(), "s.sp");
  ASSERT_TRUE(seq.ok()) << seq.error().str();
  auto two = ir::parseProgram(mergedDist(2, 4, 2, "[4, 2, 2]"), "d.sp");
  ASSERT_TRUE(two.ok()) << two.error().str();
  auto f = inferRelations(*seq, *two);
  ASSERT_TRUE(f.ok()) << f.error().str();
  EXPECT_NE(printRelations(*f).find(
                "for r in tp: dist[r].w = concat(dim=1, slice(seq.w, dim=1, start=idx(r,tp)*4, end=(idx(r,tp)+1)*4), "
                "slice(seq.w, dim=1, start=idx(r,tp)*2+8, end=(idx(r,tp)+1)*2+8), "
                "slice(seq.w, dim=1, start=idx(r,tp)*2+12, end=(idx(r,tp)+1)*2+12))\n"),
            std::string::npos)
      << printRelations(*f);
  // TP 4: q split four ways; k and v (4 units) two ways, each shard held by
  // two consecutive ranks.
  auto four = ir::parseProgram(mergedDist(4, 2, 2, "[2, 2, 2]"), "d.sp");
  ASSERT_TRUE(four.ok()) << four.error().str();
  auto g = inferRelations(*seq, *four);
  ASSERT_TRUE(g.ok()) << g.error().str();
  EXPECT_NE(printRelations(*g).find("slice(seq.w, dim=1, start=idx(r,tp)/2*2+8, end=(idx(r,tp)/2+1)*2+8)"),
            std::string::npos)
      << printRelations(*g);
  // The blocked proposals are verified, since the program is written that
  // way (outputs expected as S's layout of the blocks).
  for (auto* p : {&*two, &*four}) {
    RelationFile rel = p == &*two ? *f : *g;
    int tp = int(p->worldSize());
    std::string qs = "concat(dim=1";
    for (int r = 0; r < tp; ++r) qs += ", dist[" + std::to_string(r) + "].q";
    auto q = parseRelExpr(qs + ")");
    ASSERT_TRUE(q.ok());
    rel.outputs.push_back({"q", *q, ""});
    auto rep = verify(*seq, *p, rel, {});
    ASSERT_TRUE(rep.ok()) << rep.error().str();
    EXPECT_EQ(rep->verdict, Verdict::Verified) << test::describe(*rep);
  }
  // Cut at 3 on each rank: neither [4, 2, 2] blocks nor S's cuts inside one
  // contiguous shard (4 at [0, 8)): a relation file is needed.
  std::string oddText = mergedDist(2, 4, 2, "[3, 3, 2]");
  oddText.replace(oddText.find("%a: f32[3, 2] = add(%k, %v)"), 27, "%a: f32[3, 3] = add(%q, %k)");
  oddText.replace(oddText.find("%t: f32[3, 2]"), 13, "%t: f32[3, 3]");
  auto odd = ir::parseProgram(oddText, "d.sp");
  ASSERT_TRUE(odd.ok()) << odd.error().str();
  auto h = inferRelations(*seq, *odd);
  ASSERT_FALSE(h.ok());
  EXPECT_NE(h.error().message.find("D input 'w' needs a relation: S cuts its dim 1 at [8, 12], each rank's shard at "
                                   "[3, 6]"),
            std::string::npos)
      << h.error().message;
}

// Equal blocks (multi-head attention's q, k and v of one size): the union
// over the ranks of S's cuts inside each contiguous shard ({16 % 12, 8} at
// TP 2, {16 % 6, 8 % 6} at TP 4) equals each rank's cuts, but no single
// rank's shard holds them, so the layout is per block. It was proposed as
// one contiguous shard per rank, and the correct program refuted.
TEST(InferRelations, EqualBlocksAreNotOneContiguousShard) {
  auto seq = ir::parseGraph(
      "graph s {\n  input %x: f32[3, 8]\n  param %w: f32[8, 24]\n  %h: f32[3, 24] = matmul(%x, %w)\n"
      "  %q, %k, %v = split(%h) {axis = 1, sizes = [8, 8, 8]}\n  %a: f32[3, 8] = mul(%q, %k)\n"
      "  %t: f32[3, 8] = add(%a, %v)\n  output %t\n}\n",
      "s.sp");
  ASSERT_TRUE(seq.ok()) << seq.error().str();
  for (int tp : {2, 4}) {
    std::string n = std::to_string(tp), b = std::to_string(8 / tp), w = std::to_string(24 / tp);
    auto dist = ir::parseProgram("program d {\n  world " + n + "\n  mesh [tp = " + n + "]\n  rank 0.." +
                                     std::to_string(tp - 1) + " {\n    input %x: f32[3, 8]\n    param %w: f32[8, " + w +
                                     "]\n    %h: f32[3, " + w + "] = matmul(%x, %w)\n    %q, %k, %v = split(%h) {axis = 1, "
                                     "sizes = [" + b + ", " + b + ", " + b + "]}\n    %a: f32[3, " + b +
                                     "] = mul(%q, %k)\n    %t: f32[3, " + b + "] = add(%a, %v)\n    output %t\n  }\n}\n",
                                 "d.sp");
    ASSERT_TRUE(dist.ok()) << dist.error().str();
    auto f = inferRelations(*seq, *dist);
    ASSERT_TRUE(f.ok()) << f.error().str();
    std::string rel = printRelations(*f);
    EXPECT_NE(rel.find("for r in tp: dist[r].w = concat(dim=1, slice(seq.w, dim=1, start=idx(r,tp)*" + b +
                       ", end=(idx(r,tp)+1)*" + b + "), slice(seq.w, dim=1, start=idx(r,tp)*" + b + "+8, "),
              std::string::npos)
        << rel;
    std::string ts = "concat(dim=1";
    for (int r = 0; r < tp; ++r) ts += ", dist[" + std::to_string(r) + "].t";
    auto t = parseRelExpr(ts + ")");
    ASSERT_TRUE(t.ok());
    f->outputs.push_back({"t", *t, ""});
    auto rep = verify(*seq, *dist, *f, {});
    ASSERT_TRUE(rep.ok()) << rep.error().str();
    EXPECT_EQ(rep->verdict, Verdict::Verified) << test::describe(*rep);
  }
}

TEST(InferRelations, UnmatchedInputIsAnError) {
  Case c = load("col_seq.sp", "col_tp2_wrong_dim.sp", "col_tp2.rel");
  auto s = ir::parseGraph("graph g {\n  input %z: f32[8, 16]\n  output %z\n}\n", "g.sp");
  ASSERT_TRUE(s.ok());
  auto f = inferRelations(*s, c.dist);
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.error().id, "unmatched-input");
}

}  // namespace
}  // namespace sp::rewrite

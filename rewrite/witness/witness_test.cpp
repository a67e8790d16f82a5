// The witness of a refutation: it honours VerifyOptions::witnessWorkLimit
// (a skipped witness leaves the verdict inconclusive, with the reason), it
// reports progress, and its estimate counts only the cones it runs.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "ir/text.h"
#include "rewrite/verify/verify.h"
#include "rewrite/verify/verify_test_util.h"
#include "rewrite/witness/witness.h"

namespace sp::rewrite {
namespace {

using testutil::Case;

// The Megatron TP MLP without its all_reduce (rewrite/testdata/verify).
Case missingAllReduce() { return testutil::load("mlp_seq.sp", "mlp_tp2_no_allreduce.sp", "mlp_tp2.rel"); }

TEST(Witness, RefutesWithinTheLimitAndReportsProgress) {
  Case c = missingAllReduce();
  VerifyOptions o;
  double lastDone = -1, total = 0;
  int calls = 0;
  o.witnessProgress = [&](double done, double tot, const std::string& at) {
    EXPECT_GE(done, lastDone) << at;
    EXPECT_LE(done, tot) << at;
    EXPECT_TRUE(at.rfind("seq ", 0) == 0 || at.rfind("rank ", 0) == 0) << at;
    lastDone = done;
    total = tot;
    ++calls;
  };
  auto rep = verify(c.seq, c.dist, c.rel, o);
  ASSERT_TRUE(rep.ok()) << rep.error().str();
  ASSERT_EQ(rep->verdict, Verdict::Refuted) << rep->reason;
  ASSERT_TRUE(rep->failure && rep->failure->witness);
  EXPECT_GT(rep->failure->witness->worstOutput.maxRelErr, o.tolerance);
  // At the localized value the partial sums, summed over tp, are S's y:
  // every rank's copy of a closest tensor was kept for that comparison.
  EXPECT_LT(rep->failure->witness->atLocalized.maxRelErr, 1e-5) << rep->failure->message;
  EXPECT_GT(calls, 0);
  EXPECT_GT(total, 0);
}

TEST(Witness, LimitBelowTheEstimateIsInconclusiveWithTheReason) {
  Case c = missingAllReduce();
  VerifyOptions o;
  o.witnessWorkLimit = 100;  // multiply-adds: far below the two matmuls of S alone
  bool ran = false;
  o.witnessProgress = [&](double, double, const std::string&) { ran = true; };
  auto rep = verify(c.seq, c.dist, c.rel, o);
  ASSERT_TRUE(rep.ok()) << rep.error().str();
  EXPECT_EQ(rep->verdict, Verdict::Inconclusive);
  EXPECT_NE(rep->reason.find("witness skipped: about "), std::string::npos) << rep->reason;
  EXPECT_NE(rep->reason.find("exceed the witness limit of 100 (--witness-limit)"), std::string::npos) << rep->reason;
  ASSERT_TRUE(rep->failure.has_value());
  EXPECT_FALSE(rep->failure->witness.has_value());
  EXPECT_FALSE(ran);
}

// The time limit covers the witness: a witness whose deadline has passed
// when it starts stops before its first op, and the verdict is
// inconclusive with the reason, never refuted without a witness.
TEST(Witness, PassedDeadlineIsInconclusiveWithTheTimeLimitReason) {
  Case c = missingAllReduce();
  VerifyOptions o;
  o.witnessTimeLimitSeconds = 0;
  auto rep = verify(c.seq, c.dist, c.rel, o);
  ASSERT_TRUE(rep.ok()) << rep.error().str();
  EXPECT_EQ(rep->verdict, Verdict::Inconclusive) << rep->reason;
  EXPECT_NE(rep->reason.find("; witness time limit of 0 s reached while computing the witness (S interpreted up to "),
            std::string::npos)
      << rep->reason;
  EXPECT_NE(rep->reason.find(", 0 of "), std::string::npos) << rep->reason;
  ASSERT_TRUE(rep->failure.has_value());
  EXPECT_FALSE(rep->failure->witness.has_value());
  // A cap above the run's limit leaves the run's limit in charge: the same
  // case refutes.
  o.witnessTimeLimitSeconds = 1e9;
  rep = verify(c.seq, c.dist, c.rel, o);
  ASSERT_TRUE(rep.ok()) << rep.error().str();
  EXPECT_EQ(rep->verdict, Verdict::Refuted) << rep->reason;
}

TEST(Witness, RunStopsAtTheDeadlineSayingHowFarItGot) {
  Case c = missingAllReduce();
  WitnessPlan plan{{"y"}, {{"y"}, {"y"}}};
  auto past = std::chrono::steady_clock::now() - std::chrono::seconds(1);
  auto run = runWitness(c.seq, c.dist, c.rel, plan, 0, {}, past);
  ASSERT_FALSE(run.ok());
  EXPECT_EQ(run.error().id, "time-limit");
  EXPECT_EQ(run.error().message.rfind("S interpreted up to matmul 'h'", 0), 0u) << run.error().message;
  EXPECT_NE(run.error().message.find(", 0 of 3 ops done"), std::string::npos) << run.error().message;
  auto full = runWitness(c.seq, c.dist, c.rel, plan, 0, {}, std::chrono::steady_clock::now() + std::chrono::hours(1));
  ASSERT_TRUE(full.ok()) << full.error().str();
}

// The natural rebuilds of an S value from D tensors: partial sums summed
// over tp, column shards concatenated, a replicated tensor's chunk; a
// passed deadline stops the search with "time-limit" rather than answering
// from a partial search.
TEST(Witness, CandidatesAreRebuildsOfFittingShape) {
  Case c = missingAllReduce();
  WitnessPlan plan{{"h", "y"}, {{"h", "y"}, {"h", "y"}}};
  auto run = runWitness(c.seq, c.dist, c.rel, plan, 0);
  ASSERT_TRUE(run.ok()) << run.error().str();
  const ir::Tensor& sy = run->seq[size_t(*c.seq.findValue("y"))];
  const ir::Tensor& sh = run->seq[size_t(*c.seq.findValue("h"))];
  std::vector<std::pair<int64_t, std::string>> ys{{0, "y"}, {1, "y"}}, hs{{0, "h"}, {1, "h"}};
  auto y = bestCandidate(sy, *run, c.dist, ys);
  ASSERT_TRUE(y.ok() && y->has_value());
  EXPECT_EQ((*y)->what, "sum over tp of y");
  EXPECT_EQ((*y)->kind, Candidate::Kind::Sum);
  EXPECT_EQ((*y)->group, "tp");
  EXPECT_EQ((*y)->name, "y");
  EXPECT_LT((*y)->err.maxRelErr, 1e-5);
  auto h = bestCandidate(sh, *run, c.dist, hs);
  ASSERT_TRUE(h.ok() && h->has_value());
  EXPECT_EQ((*h)->what, "concat over tp of h along dim 1");
  EXPECT_EQ((*h)->kind, Candidate::Kind::Concat);
  EXPECT_EQ((*h)->dim, 1);
  EXPECT_EQ((*h)->err.maxAbsErr, 0);
  // S's h is two ranks' worth of D's h along dim 1: its chunks rebuild D's.
  WitnessRun swapped;
  swapped.dist.resize(2);
  swapped.dist[0]["whole"] = sh;
  auto chunk = bestCandidate(run->dist[1].at("h"), swapped, c.dist, {{0, "whole"}});
  ASSERT_TRUE(chunk.ok() && chunk->has_value());
  EXPECT_EQ((*chunk)->what, "chunk 1 of dist[0].whole along dim 1");
  EXPECT_EQ((*chunk)->err.maxAbsErr, 0);
  // The ranks' shards in reverse order are still a rebuild (a clean
  // relation, concat in another rank order), named with the order.
  WitnessRun reversed;
  reversed.dist = {{{"h", run->dist[1].at("h")}}, {{"h", run->dist[0].at("h")}}};
  auto back = bestCandidate(sh, reversed, c.dist, hs);
  ASSERT_TRUE(back.ok() && back->has_value());
  EXPECT_EQ((*back)->what, "concat over tp of h along dim 1 in rank order 1, 0");
  EXPECT_EQ((*back)->order, (std::vector<int64_t>{1, 0}));
  EXPECT_EQ((*back)->err.maxAbsErr, 0);
  EXPECT_TRUE((*h)->order.empty());
  // No D tensor of a fitting shape: no candidate.
  auto none = bestCandidate(sy.reshaped({128}), *run, c.dist, ys);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
  auto late = bestCandidate(sy, *run, c.dist, ys, std::chrono::steady_clock::now() - std::chrono::seconds(1));
  ASSERT_FALSE(late.ok());
  EXPECT_EQ(late.error().id, "time-limit");
}

// A vocab-parallel lookup over 16 rows, TP=2, whose all_reduce was dropped,
// followed by the elementwise `f`: S is f(gather(table, ids)), rank r's
// output f(masked lookup in its 8 rows).
struct EmbedCase {
  Result<ir::Graph> seq;
  Result<ir::Program> dist;
  Result<RelationFile> rel;
};
EmbedCase embedWithoutAllReduce(const std::string& f) {
  std::string seqText = R"(graph embed {
  input %ids: i64[8]
  param %table: f32[16, 8]
  %emb: f32[8, 8] = gather(%table, %ids)
  %y: f32[8, 8] = F(%emb)
  output %y
})";
  std::string body = R"(
    input %ids: i64[8]
    param %table: f32[8, 8]
    %start: i64[] = constant() {value = dense<i64[], [START]>}
    %end: i64[] = constant() {value = dense<i64[], [END]>}
    %below: bool[8] = lt(%ids, %start)
    %above: bool[8] = ge(%ids, %end)
    %oob: bool[8] = or(%below, %above)
    %loc: i64[8] = sub(%ids, %start)
    %zi: i64[] = constant() {value = dense<i64[], [0]>}
    %safe: i64[8] = where(%oob, %zi, %loc)
    %zf: f32[] = constant() {value = dense<f32[], [0.0]>}
    %g: f32[8, 8] = gather(%table, %safe)
    %oob2: bool[8, 1] = unsqueeze(%oob) {axes = [1]}
    %gm: f32[8, 8] = where(%oob2, %zf, %g)
    %y: f32[8, 8] = F(%gm)
    output %y
)";
  auto fill = [&](std::string t, const std::string& key, const std::string& v) {
    return t.replace(t.find(key), key.size(), v);
  };
  auto rankBody = [&](const std::string& start, const std::string& end) {
    return fill(fill(fill(body, "START", start), "END", end), "F(", f + "(");
  };
  return EmbedCase{
      ir::parseGraph(fill(seqText, "F(", f + "("), "embed.sp"),
      ir::parseProgram("program embed_vp2 {\n  world 2\n  mesh [tp = 2]\n  rank 0 {" + rankBody("0", "8") +
                           "  }\n  rank 1 {" + rankBody("8", "16") + "  }\n}\n",
                       "embed_vp2.sp"),
      parseRelations("dist[*].ids = seq.ids\n"
                     "for r in tp: dist[r].table = slice(seq.table, dim=0, start=idx(r,tp)*8, end=(idx(r,tp)+1)*8)\n",
                     "embed.rel")};
}

// That case verified with default options (a parse error is returned).
Result<VerifyReport> verifyEmbedWithoutAllReduce(const std::string& f) {
  EmbedCase c = embedWithoutAllReduce(f);
  SP_ASSIGN(ir::Graph seq, std::move(c.seq));
  SP_ASSIGN(ir::Program dist, std::move(c.dist));
  SP_ASSIGN(RelationFile rel, std::move(c.rel));
  return verify(seq, dist, rel, {});
}

// A vocab-parallel lookup whose all_reduce was dropped: no lemma relates
// the masked rank-local lookups without the sum the collective makes, so
// the failure is at the lookup; the witness finds S's value is the sum over
// tp of D's masked lookups and the message names the missing collective,
// with the D line where the sum should have been.
TEST(Witness, LocalizedValueRebuiltBySumNamesTheMissingAllReduce) {
  auto rep = verifyEmbedWithoutAllReduce("exp");
  ASSERT_TRUE(rep.ok()) << rep.error().str();
  ASSERT_EQ(rep->verdict, Verdict::Refuted) << rep->reason;
  ASSERT_TRUE(rep->failure && rep->failure->witness);
  const Failure& f = *rep->failure;
  EXPECT_EQ(f.seqValue, "emb");
  EXPECT_EQ(f.witness->atLocalizedRebuild, "sum over tp of gm");
  EXPECT_LT(f.witness->atLocalized.maxRelErr, 1e-6);
  EXPECT_NE(f.message.find("on the witness it equals the sum over group tp of D's 'gm' (embed_vp2.sp:"),
            std::string::npos)
      << f.message;
  EXPECT_NE(f.message.find("missing sum over group tp (all_reduce)"), std::string::npos) << f.message;
}

// A column-parallel output gathered on the wrong dim: at the localized
// value the witness rebuilds S's h as the concat of the rank-local shards
// and says which all_gather would. A replicated-output bug whose localized
// value diverges everywhere gets no such hint.
TEST(Witness, ConcatRebuildNamesTheGatherThatWould) {
  Case c = testutil::load("col_seq.sp", "col_tp2_wrong_dim.sp", "col_tp2.rel");
  auto rep = verify(c.seq, c.dist, c.rel, {});
  ASSERT_TRUE(rep.ok()) << rep.error().str();
  ASSERT_EQ(rep->verdict, Verdict::Refuted) << rep->reason;
  ASSERT_TRUE(rep->failure && rep->failure->witness);
  EXPECT_EQ(rep->failure->witness->atLocalizedRebuild, "concat over tp of hl along dim 1");
  EXPECT_NE(rep->failure->message.find("which D never computes (an all_gather over group tp along dim 1 would)"),
            std::string::npos)
      << rep->failure->message;
  Case g = testutil::load("mlp_seq.sp", "mlp_tp2_allgather.sp", "mlp_tp2.rel");
  auto bad = verify(g.seq, g.dist, g.rel, {});
  ASSERT_TRUE(bad.ok()) << bad.error().str();
  ASSERT_TRUE(bad->failure && bad->failure->witness) << bad->reason;
  EXPECT_GT(bad->failure->witness->atLocalized.maxRelErr, 1e-3);
  EXPECT_EQ(bad->failure->message.find("on the witness it equals"), std::string::npos) << bad->failure->message;
}

// A dropped max all_reduce over a TP split: on seed 0 rank 0's shard holds
// every row's max (a 1-in-16 draw), so its local max matches S; a cheap
// witness moves on to the next seed, which refutes, and reports that seed.
TEST(Witness, CheapWitnessTriesFurtherSeeds) {
  auto seq = ir::parseGraph(R"(graph m {
  input %x: f32[4, 8]
  %hi: f32[4, 1] = reduce_max(%x) {axes = [1], keepdims = 1}
  output %hi
})", "m.sp");
  auto dist = ir::parseProgram(R"(program m2 {
  world 2
  mesh [tp = 2]
  rank 0..1 {
    input %x: f32[4, 4]
    %hi_l: f32[4, 1] = reduce_max(%x) {axes = [1], keepdims = 1}
    %hi: f32[4, 1] = identity(%hi_l)
    output %hi
  }
})", "m2.sp");
  auto rel = parseRelations("for r in tp: dist[r].x = slice(seq.x, dim=1, start=idx(r,tp)*4, end=(idx(r,tp)+1)*4)\n"
                            "expect seq.hi = dist[0].hi\n",
                            "m.rel");
  ASSERT_TRUE(seq.ok() && dist.ok() && rel.ok());
  // The full-size witness's draws (a shrunk witness, one row, draws others).
  VerifyOptions full;
  full.shrinkWitness = false;
  auto rep = verify(*seq, *dist, *rel, full);
  ASSERT_TRUE(rep.ok()) << rep.error().str();
  ASSERT_EQ(rep->verdict, Verdict::Refuted) << rep->reason;
  ASSERT_TRUE(rep->failure && rep->failure->witness);
  EXPECT_EQ(rep->failure->witness->seed, 1u);
  EXPECT_GT(rep->failure->witness->worstOutput.maxRelErr, 0.1);
  // Starting from seed 1, the first try refutes.
  VerifyOptions from1 = full;
  from1.seed = 1;
  auto again = verify(*seq, *dist, *rel, from1);
  ASSERT_TRUE(again.ok() && again->failure && again->failure->witness);
  EXPECT_EQ(again->failure->witness->seed, 1u);
}

// D's outputs are partial lookups whose sum over tp is S's tanh (tanh(0) is
// 0 on the rank that masks a token): no lemma proves it, and no seed
// diverges; the reason names the seeds tried.
TEST(Witness, NoDivergenceOnAnySeedIsInconclusive) {
  auto rep = verifyEmbedWithoutAllReduce("tanh");
  ASSERT_TRUE(rep.ok()) << rep.error().str();
  EXPECT_EQ(rep->verdict, Verdict::Inconclusive);
  EXPECT_NE(rep->reason.find("the witness (seeds 0..3) shows no divergence"), std::string::npos) << rep->reason;
}

// The closest D tensors are kept on every rank for the rebuilds over groups,
// unless those copies would take more than 512 MiB (1024 ranks x 6 MiB of
// partial sums); then only the ranks the failure names keep theirs.
TEST(Witness, ClosestTensorsOfLargeGroupsAreKeptWhereNamed) {
  auto seq = ir::parseGraph("graph s {\n  input %x: f32[2048, 768]\n  %y: f32[2048, 768] = neg(%x)\n  output %y\n}\n", "s.sp");
  ASSERT_TRUE(seq.ok());
  for (int64_t n : {4, 1024}) {
    auto dist = ir::parseProgram("program d {\n  world " + std::to_string(n) + "\n  rank 0.." + std::to_string(n - 1) +
                                     " {\n    input %x: f32[2048, 768]\n    %q: f32[2048, 768] = neg(%x)\n"
                                     "    %y: f32[2048, 768] = neg(%q)\n    output %y\n  }\n}\n",
                                 "d.sp");
    ASSERT_TRUE(dist.ok()) << dist.error().str();
    Failure f;
    f.seqValue = "y";
    f.closestDist = {{0, "q"}, {1, "q"}};
    WitnessPlan plan = planWitness(*seq, *dist, f, {}, {});
    auto keeps = [&](int64_t r) {
      const auto& k = plan.dist[size_t(r)];
      return std::find(k.begin(), k.end(), "q") != k.end();
    };
    EXPECT_TRUE(keeps(0) && keeps(1)) << n;
    EXPECT_EQ(keeps(3), n == 4) << n;
  }
}

TEST(Witness, WorkCountsOnlyTheConesThatRun) {
  Case c = missingAllReduce();
  WitnessPlan all{{"y"}, {{"y"}, {"y"}}};
  WitnessPlan firstLayer{{"h"}, {{"h"}, {"h"}}};
  WitnessWork a = estimateWork(c.seq, c.dist, all), h = estimateWork(c.seq, c.dist, firstLayer);
  // S: h = x @ w1 is 8x32 outputs of 16 products; the whole MLP adds gelu
  // (8x32) and y = g @ w2 (8x16 outputs of 32 products). D ranks hold halves.
  EXPECT_EQ(h.seq, 8 * 32 * 16);
  EXPECT_EQ(a.seq, 8 * 32 * 16 + 8 * 32 + 8 * 16 * 32);
  ASSERT_EQ(h.dist.size(), 2u);
  EXPECT_EQ(h.dist[0], 8 * 16 * 16);
  EXPECT_EQ(a.dist[1], 8 * 16 * 16 + 8 * 16 + 8 * 16 * 16);
  EXPECT_LT(h.total(), a.total());
}

// A vocab-parallel embedding whose shard mask is off by one (ids > end
// instead of >= end): the first id of the next shard indexes one row past
// the rank's table. D faults where S runs, so it holds no value of S's:
// refuted, the fault named; the correct mask verifies.
TEST(Witness, DistIndexingOutOfRangeIsARefutation) {
  Case ok = testutil::load("vocab_emb_seq.sp", "vocab_emb_tp2.sp", "vocab_emb_tp2.rel");
  auto good = verify(ok.seq, ok.dist, ok.rel, {});
  ASSERT_TRUE(good.ok()) << good.error().str();
  EXPECT_EQ(good->verdict, Verdict::Verified) << good->reason;
  Case bad = testutil::load("vocab_emb_seq.sp", "vocab_emb_tp2_mask_gt.sp", "vocab_emb_tp2.rel");
  auto rep = verify(bad.seq, bad.dist, bad.rel, {});
  ASSERT_TRUE(rep.ok()) << rep.error().str();
  EXPECT_EQ(rep->verdict, Verdict::Refuted) << rep->reason;
  ASSERT_TRUE(rep->failure && rep->failure->witness);
  EXPECT_NE(rep->failure->witness->fault.find("gather 'g'"), std::string::npos) << rep->failure->witness->fault;
  EXPECT_NE(rep->failure->witness->fault.find("out of range"), std::string::npos) << rep->failure->witness->fault;
}

}  // namespace
}  // namespace sp::rewrite

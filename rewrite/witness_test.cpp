// The witness of a refutation: it honours VerifyOptions::witnessWorkLimit
// (a skipped witness leaves the verdict inconclusive, with the reason), it
// reports progress, and its estimate counts only the cones it runs.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "ir/text.h"
#include "rewrite/verify.h"
#include "rewrite/verify_test_util.h"
#include "rewrite/witness.h"

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
  EXPECT_LT((*y)->err.maxRelErr, 1e-5);
  auto h = bestCandidate(sh, *run, c.dist, hs);
  ASSERT_TRUE(h.ok() && h->has_value());
  EXPECT_EQ((*h)->what, "concat over tp of h along dim 1");
  EXPECT_EQ((*h)->err.maxAbsErr, 0);
  // S's h is two ranks' worth of D's h along dim 1: its chunks rebuild D's.
  WitnessRun swapped;
  swapped.dist.resize(2);
  swapped.dist[0]["whole"] = sh;
  auto chunk = bestCandidate(run->dist[1].at("h"), swapped, c.dist, {{0, "whole"}});
  ASSERT_TRUE(chunk.ok() && chunk->has_value());
  EXPECT_EQ((*chunk)->what, "chunk 1 of dist[0].whole along dim 1");
  EXPECT_EQ((*chunk)->err.maxAbsErr, 0);
  // No D tensor of a fitting shape: no candidate.
  auto none = bestCandidate(sy.reshaped({128}), *run, c.dist, ys);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
  auto late = bestCandidate(sy, *run, c.dist, ys, std::chrono::steady_clock::now() - std::chrono::seconds(1));
  ASSERT_FALSE(late.ok());
  EXPECT_EQ(late.error().id, "time-limit");
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

}  // namespace
}  // namespace sp::rewrite

// E-graph unit tests: hash-consing, congruence, matching with integer
// variables, extraction, budgets.
#include <gtest/gtest.h>

#include "rewrite/egraph.h"

namespace sp::rewrite {
namespace {

ir::TensorType f32(std::vector<int64_t> d) { return {ir::DType::F32, ir::shapeOf(d)}; }

TEST(EGraph, HashConsing) {
  EGraph g;
  ClassId a = g.add({1, {0}, {}}, f32({2}));
  ClassId a2 = g.add({1, {0}, {}}, f32({2}));
  EXPECT_EQ(a, a2);
  ClassId b = g.add({1, {1}, {}}, f32({2}));
  EXPECT_NE(a, b);
  EXPECT_EQ(g.numNodes(), 2u);
}

TEST(EGraph, CongruenceAfterMerge) {
  EGraph g;
  ClassId a = g.add({1, {0}, {}}, f32({2}));
  ClassId b = g.add({1, {1}, {}}, f32({2}));
  ClassId fa = g.add({2, {}, {a}}, f32({2}));
  ClassId fb = g.add({2, {}, {b}}, f32({2}));
  ClassId ffa = g.add({2, {}, {fa}}, f32({2}));
  ClassId ffb = g.add({2, {}, {fb}}, f32({2}));
  EXPECT_NE(g.find(fa), g.find(fb));
  g.merge(a, b);
  g.rebuild();
  EXPECT_EQ(g.find(fa), g.find(fb));
  EXPECT_EQ(g.find(ffa), g.find(ffb));
  EXPECT_EQ(g.lookup({2, {}, {b}}), g.find(fa));
}

TEST(EGraph, MatchingBindsIntVariablesConsistently) {
  EGraph g;
  ClassId x = g.add({1, {0}, {}}, f32({4}));
  ClassId s1 = g.add({3, {0, 2}, {x}}, f32({2}));
  ClassId s2 = g.add({3, {2, 2}, {x}}, f32({0}));
  (void)s1;
  (void)s2;
  // slice(?x, ?a, ?a): both data equal.
  EPattern p;
  p.op = 3;
  p.data = {{true, 0}, {true, 0}};
  EPattern v;
  v.isVar = true;
  v.var = 0;
  p.kids = {v};
  auto m = g.match(p, 1, 1);
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].first, g.find(s2));
  EXPECT_EQ(*m[0].second.ints[0], 2);
  EXPECT_EQ(m[0].second.classes[0], g.find(x));
}

TEST(EGraph, ExtractionPicksCheapestAndHonorsForbiddenNodes) {
  EGraph g;
  ClassId a = g.add({1, {0}, {}}, f32({2}));
  ClassId f = g.add({2, {}, {a}}, f32({2}));
  ClassId leaf = g.add({1, {7}, {}}, f32({2}));
  g.merge(f, leaf);
  g.rebuild();
  auto best = g.extract([](const ENode& n, const std::vector<double>& k) -> std::optional<double> {
    double c = 1;
    for (double x : k) c += x;
    return c;
  });
  EXPECT_EQ(best.at(g.find(f)).second.op, 1);
  auto onlyF = g.extract([](const ENode& n, const std::vector<double>& k) -> std::optional<double> {
    if (n.op == 1 && n.data[0] == 7) return std::nullopt;
    double c = 1;
    for (double x : k) c += x;
    return c;
  });
  EXPECT_EQ(onlyF.at(g.find(f)).second.op, 2);
}

TEST(EGraph, StopReasonNames) {
  EXPECT_EQ(stopReasonName(StopReason::NodeLimit), "node-limit");
  EXPECT_EQ(stopReasonName(StopReason::GoalReached), "goal-reached");
}

}  // namespace
}  // namespace sp::rewrite

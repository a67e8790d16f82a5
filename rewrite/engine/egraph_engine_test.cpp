// E-graph unit tests: hash-consing, congruence, matching with integer
// variables, extraction, budgets.
#include <gtest/gtest.h>

#include "rewrite/engine/egraph.h"

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

// A commutative op's node is one node whatever the order of its children,
// stays so after merges reorder their classes, and a binary pattern with
// structure on one side matches it in either order.
TEST(EGraph, CommutativeNodesAreMultisets) {
  EGraph g;
  const int32_t sum = 7;
  g.setCommutative(sum);
  ClassId a = g.add({1, {0}, {}}, f32({2}));
  ClassId b = g.add({1, {1}, {}}, f32({2}));
  ClassId c = g.add({1, {2}, {}}, f32({2}));
  ClassId fc = g.add({2, {}, {c}}, f32({2}));
  EXPECT_EQ(g.add({sum, {}, {a, b, c}}, f32({2})), g.add({sum, {}, {c, a, b}}, f32({2})));
  ClassId ab = g.add({sum, {}, {a, fc}}, f32({2}));
  ClassId ba = g.add({sum, {}, {fc, b}}, f32({2}));
  EXPECT_NE(g.find(ab), g.find(ba));
  g.merge(a, b);
  g.rebuild();
  EXPECT_EQ(g.find(ab), g.find(ba));
  // sum(f(?x), ?y) finds f(c) whichever child slot holds it.
  EPattern pat{false, -1, sum, {}, {EPattern{false, -1, 2, {}, {EPattern{true, 0, 0, {}, {}}}}, EPattern{true, 1, 0, {}, {}}}};
  std::vector<Subst> found;
  g.matchAt(pat, ab, Subst{{-1, -1}, {}}, found);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(g.find(found[0].classes[0]), g.find(c));
  EXPECT_EQ(g.find(found[0].classes[1]), g.find(a));
  // A non-commutative op keeps its order.
  EXPECT_NE(g.add({3, {}, {a, c}}, f32({2})), g.add({3, {}, {c, a}}, f32({2})));
}

// Layer memoization rests on this: isomorphic e-graphs (leaves renamed) have
// one canonical text; any difference in an op, its data, a type or sharing
// gives another.
TEST(EGraph, CanonicalTextRenamesLeavesOnly) {
  const int32_t leaf = 9;
  auto build = [&](int64_t base, int64_t attr, bool share, std::vector<int64_t> dims) {
    EGraph g;
    ClassId a = g.add({leaf, {0, base}, {}}, f32(dims));
    ClassId b = g.add({leaf, {1, base + 1}, {}}, f32(dims));
    ClassId f = g.add({2, {attr}, {a, share ? a : b}}, f32(dims));
    g.rebuild();
    std::vector<std::vector<int64_t>> leaves;
    return std::make_pair(g.canonicalText(leaf, {f}, leaves), leaves);
  };
  auto [t1, l1] = build(10, 7, false, {2});
  auto [t2, l2] = build(50, 7, false, {2});
  EXPECT_EQ(t1, t2);
  ASSERT_EQ(l1.size(), 2u);
  EXPECT_EQ(l2[0], (std::vector<int64_t>{0, 50}));
  EXPECT_NE(t1, build(10, 8, false, {2}).first);  // attribute (a rank-dependent constant)
  EXPECT_NE(t1, build(10, 7, true, {2}).first);   // sharing
  EXPECT_NE(t1, build(10, 7, false, {3}).first);  // type
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

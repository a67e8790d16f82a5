#include <gtest/gtest.h>

#include "rewrite/relation/relation.h"
#include "rewrite/smt/smt.h"

namespace sp::rewrite {
namespace {

using smt::Term;

// Slice bounds of `slice(w, dim, r*S, (r+1)*S)` for a symbolic rank r in [0, g).
TEST(Smt, SliceBoundsWithRankVariableProven) {
  smt::Context z;
  Term r = z.intVar("r"), g = z.intVar("g"), s = z.intVar("s"), n = z.intVar("n");
  std::vector<Term> assume = {z.le(z.intVal(0), r), z.lt(r, g), z.gt(s, z.intVal(0)), z.eq(n, z.mul(g, s))};
  // n = g*s is nonlinear; fix g symbolic but s constant instead:
  assume.back() = z.eq(n, z.mulConst(g, 128));
  Term start = z.mulConst(r, 128), end = z.mulConst(r + z.intVal(1), 128);
  auto res = z.check(assume, z.and_({z.le(z.intVal(0), start), z.le(start, end), z.le(end, n)}));
  EXPECT_EQ(res.verdict, smt::Verdict::Proved) << res.reason;
  EXPECT_EQ(z.stats().proved, 1);
}

TEST(Smt, WrongOffsetRefutedWithModel) {
  smt::Context z;
  Term r = z.intVar("r"), n = z.intVar("n");
  std::vector<Term> assume = {z.le(z.intVal(0), r), z.lt(r, z.intVal(4)), z.eq(n, z.intVal(4 * 128))};
  Term end = z.mulConst(r + z.intVal(2), 128);  // off by one shard
  auto res = z.check(assume, z.le(end, n));
  ASSERT_EQ(res.verdict, smt::Verdict::Refuted);
  EXPECT_EQ(res.model.intValue("r"), 3);
  EXPECT_EQ(res.model.str(), "n = 512, r = 3");
}

TEST(Smt, DivisibilityAndModulo) {
  smt::Context z;
  Term h = z.intVar("h");
  auto res = z.check({z.eq(z.modConst(h, 8), z.intVal(0)), z.gt(h, z.intVal(0))},
                     z.eq(z.modConst(h, 4), z.intVal(0)));
  EXPECT_EQ(res.verdict, smt::Verdict::Proved);
  auto bad = z.check({z.eq(z.modConst(h, 4), z.intVal(0)), z.gt(h, z.intVal(0))},
                     z.eq(z.modConst(h, 8), z.intVal(0)));
  EXPECT_EQ(bad.verdict, smt::Verdict::Refuted);
}

// The sum of a concatenation (an ite on the bound variable) splits at the
// concat offset: sum_{t<a+b} (t<a ? f(t) : g(t-a)) = sum_{t<a} f + sum_{t<b} g.
TEST(Smt, FoldSplitsAtConcatOffset) {
  smt::Context z;
  smt::Func f = z.func("f", {smt::Sort::Int}, smt::Sort::Real);
  smt::Func g = z.func("g", {smt::Sort::Int}, smt::Sort::Real);
  Term a = z.intVar("a"), b = z.intVar("b");
  Term t1 = z.freshInt("t"), t2 = z.freshInt("t"), t3 = z.freshInt("t");
  Term whole = z.fold(smt::FoldOp::Sum, t1, z.intVal(0), a + b,
                      z.ite(z.lt(t1, a), z.apply(f, {t1}), z.apply(g, {t1 - a})));
  Term left = z.fold(smt::FoldOp::Sum, t2, z.intVal(0), a, z.apply(f, {t2}));
  Term right = z.fold(smt::FoldOp::Sum, t3, z.intVal(0), b, z.apply(g, {t3}));
  std::vector<Term> assume = {z.ge(a, z.intVal(1)), z.ge(b, z.intVal(1))};
  auto ok = z.check(assume, z.eq(whole, left + right));
  EXPECT_EQ(ok.verdict, smt::Verdict::Proved) << ok.reason;
  // Sum over the whole range is not the left part alone: never proved.
  auto no = z.check(assume, z.eq(whole, left));
  EXPECT_NE(no.verdict, smt::Verdict::Proved);
}

TEST(Smt, RelationOffsetsThroughIntExpr) {
  // idx/affine expressions evaluate as the parser builds them.
  IntExpr e = (IntExpr::var("r") + IntExpr::constant(1)) * 1536;
  auto v = e.eval({{"r", 1}}, nullptr);
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(*v, 3072);
  EXPECT_EQ(e.str(), "(r+1)*1536");
  EXPECT_EQ(IntExpr::constant(-7).modC(4).str(), "(-7)%4");
  EXPECT_EQ(*IntExpr::constant(-7).modC(4).eval({}, nullptr), 1);
}

}  // namespace
}  // namespace sp::rewrite

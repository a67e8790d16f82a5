#include <gtest/gtest.h>

#include "ir/shape.h"

namespace sp::ir {
namespace {

TEST(Dim, ConcreteAndSymbolicStrings) {
  EXPECT_EQ(Dim(768).str(), "768");
  EXPECT_EQ(Dim::sym("seq").str(), "seq");
  EXPECT_EQ((Dim(2) * Dim::sym("seq")).str(), "2*seq");
  EXPECT_EQ((Dim::sym("seq") * Dim::sym("batch")).str(), "batch*seq");
  EXPECT_TRUE(Dim(3).isConcrete());
  EXPECT_FALSE(Dim::sym("b").isConcrete());
  EXPECT_EQ(Dim(3).value(), 3);
}

TEST(Dim, MultiplyIsCommutativeAndZeroAbsorbs) {
  Dim a = Dim::sym("a") * Dim(4), b = Dim(4) * Dim::sym("a");
  EXPECT_EQ(a, b);
  Dim z = Dim(0) * Dim::sym("a");
  EXPECT_TRUE(z.isConcrete());
  EXPECT_EQ(z.value(), 0);
  EXPECT_EQ((Dim::sym("s") * Dim::sym("s")).str(), "s*s");
}

TEST(Dim, ExactDiv) {
  Dim d = Dim(8) * Dim::sym("seq");
  auto q = exactDiv(d, Dim(4));
  ASSERT_TRUE(q.has_value());
  EXPECT_EQ(q->str(), "2*seq");
  auto q2 = exactDiv(d, Dim::sym("seq"));
  ASSERT_TRUE(q2.has_value());
  EXPECT_EQ(*q2, Dim(8));
  EXPECT_FALSE(exactDiv(d, Dim(3)).has_value());
  EXPECT_FALSE(exactDiv(d, Dim::sym("batch")).has_value());
  EXPECT_FALSE(exactDiv(Dim(4), Dim(0)).has_value());
}

TEST(Dim, AddDims) {
  auto s = addDims(Dim::sym("seq"), Dim(2) * Dim::sym("seq"));
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->str(), "3*seq");
  EXPECT_EQ(*addDims(Dim(3), Dim(4)), Dim(7));
  EXPECT_EQ(*addDims(Dim(0), Dim::sym("x")), Dim::sym("x"));
  EXPECT_FALSE(addDims(Dim::sym("seq"), Dim(4)).has_value());
}

TEST(Dim, ParseRoundTrip) {
  for (std::string s : {"768", "seq", "2*seq", "batch*seq", "4*batch*seq", "0"}) {
    auto d = parseDim(s);
    ASSERT_TRUE(d.ok()) << s;
    EXPECT_EQ(d->str(), s);
  }
  auto d = parseDim("seq*batch*2");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->str(), "2*batch*seq");
}

TEST(Dim, ParseErrors) {
  auto a = parseDim("");
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.error().id, "bad-dim");
  auto b = parseDim("2**seq");
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.error().message, "malformed dim '2**seq'");
  auto c = parseDim("seq-1");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().message, "malformed dim 'seq-1'");
  auto e = parseDim("-3");
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.error().message, "dim -3 is out of range [0, 2^48]");
  EXPECT_FALSE(parseDim("12abc").ok());
}

TEST(Shape, HelpersAndBinding) {
  Shape s{Dim(8), Dim::sym("seq"), Dim(768)};
  EXPECT_EQ(shapeStr(s), "[8, seq, 768]");
  EXPECT_FALSE(isConcrete(s));
  auto n = numElements(s);
  ASSERT_TRUE(n.has_value());
  EXPECT_EQ(n->str(), "6144*seq");
  auto b = bindShape(s, {{"seq", 16}});
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(*b, (std::vector<int64_t>{8, 16, 768}));
  auto u = bindShape(s, {{"batch", 2}});
  ASSERT_FALSE(u.ok());
  EXPECT_EQ(u.error().id, "unbound-dim");
  EXPECT_EQ(u.error().message, "symbolic dim 'seq' has no value");
  EXPECT_EQ(*bindShape({Dim(2) * Dim::sym("a") * Dim::sym("b")}, {{"a", 3}, {"b", 5}}),
            std::vector<int64_t>{30});
  EXPECT_EQ(concreteDims(shapeOf({2, 3})), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(shapeStr({}), "[]");
}

TEST(Shape, NumElementsOverflowIsRejected) {
  Shape big{Dim(int64_t(1) << 30), Dim(int64_t(1) << 30)};
  EXPECT_FALSE(numElements(big).has_value());
  // Two dims of 2^40 (each within the limit) overflow int64 if multiplied before checking.
  Shape huge{Dim(int64_t(1) << 40), Dim(int64_t(1) << 40), Dim(8)};
  EXPECT_FALSE(numElements(huge).has_value());
  Shape ok{Dim(int64_t(1) << 20), Dim(int64_t(1) << 20)};
  EXPECT_EQ(numElements(ok)->coef, int64_t(1) << 40);
  // S at a global batch is never materialized: Llama 3 405B's attention
  // scores over 1,024 sequences of 8,192 tokens (2^43) are a type
  Shape scores{Dim(1024), Dim(128), Dim(8192), Dim(8192)};
  EXPECT_EQ(numElements(scores)->coef, int64_t(1) << 43);
  EXPECT_FALSE(numElements(Shape{Dim(int64_t(1) << 25), Dim(int64_t(1) << 24)}).has_value());
}

TEST(Shape, NormAxis) {
  EXPECT_EQ(*normAxis(-1, 3, "x"), 2);
  EXPECT_EQ(*normAxis(0, 3, "x"), 0);
  auto e = normAxis(3, 3, "softmax");
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.error().id, "bad-axis");
  EXPECT_EQ(e.error().message, "softmax: axis 3 is out of range for rank 3");
  EXPECT_FALSE(normAxis(-4, 3, "x").ok());
}

}  // namespace
}  // namespace sp::ir

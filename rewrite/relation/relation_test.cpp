#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "rewrite/engine/engine_verify.h"
#include "rewrite/relation/relation_text.h"

namespace sp::rewrite {
namespace {

std::string readFile(const std::string& rel) {
  std::ifstream in(std::string(SP_SOURCE_DIR) + "/" + rel);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

RankSpace tp(int64_t n) { return RankSpace{ir::Mesh{{{"tp", n}}}, {}}; }

ir::Tensor iota(std::vector<int64_t> dims) {
  ir::Tensor t(ir::DType::F32, dims);
  for (int64_t i = 0; i < t.numel(); ++i) t.setFromDouble(i, double(i));
  return t;
}

TEST(RelationText, GoldenRoundTrip) {
  auto f = parseRelations(readFile("rewrite/testdata/megatron_tp2.rel"), "megatron_tp2.rel");
  ASSERT_TRUE(f.ok()) << f.error().str();
  std::string printed = printRelations(*f);
  EXPECT_EQ(printed, readFile("rewrite/testdata/megatron_tp2.golden"));
  auto again = parseRelations(printed, "printed.rel");
  ASSERT_TRUE(again.ok()) << again.error().str();
  EXPECT_EQ(printRelations(*again), printed);
  ASSERT_EQ(f->inputs.size(), again->inputs.size());
  for (size_t i = 0; i < f->inputs.size(); ++i) EXPECT_TRUE(equal(*f->inputs[i].expr, *again->inputs[i].expr));
}

void expectError(const std::string& text, const std::string& msg) {
  auto f = parseRelations(text, "r.rel");
  ASSERT_FALSE(f.ok()) << text;
  EXPECT_EQ(f.error().str(), msg);
}

TEST(RelationText, Errors) {
  expectError("dist[0].x = slice(seq.x, dim=0, start=q, end=2)", "r.rel:1:39: unbound variable 'q'");
  expectError("dist[0].x = frob(seq.x)", "r.rel:1:13: unknown relation operator 'frob' (expected seq, dist, concat, sum, slice, reshape, permute, scale)");
  expectError("\ndist[0].x = seq.x seq.y", "r.rel:2:19: unexpected 'seq' at end of line");
  expectError("for r in 0..1: dist[r].x = slice(seq.x, dim=0, start=r*r, end=2)", "r.rel:1:55: nonlinear product r*r");
  expectError("dist[0].x = concat(seq.x, seq.y)", "r.rel:1:20: concat needs dim=N first");
}

void expectErrorHas(const std::string& text, const std::string& msg) {
  auto f = parseRelations(text, "r.rel");
  ASSERT_FALSE(f.ok()) << text.substr(0, 80);
  EXPECT_NE(f.error().str().find(msg), std::string::npos) << f.error().str();
}

// Integer constants fold without overflow, ranges stay within a world, and
// nesting deeper than the parser's limit is an error, not a stack overflow.
TEST(RelationText, OverflowRangesAndDeepNestingAreErrors) {
  expectErrorHas("dist[0].x = slice(seq.x, dim=0, start=999999999999999999*999999999999999999, end=2)",
                 "r.rel:1:57: integer overflow in 999999999999999999 * 999999999999999999");
  expectErrorHas("dist[0].x = slice(seq.x, dim=0, start=-(-2147483648*4294967296), end=2)",
                 "integer overflow in 0 - -9223372036854775808");
  expectErrorHas("for r in 0..2000000: dist[r].x = seq.x", "rank range 0..2000000 is outside 0..2^20");
  expectErrorHas("for r in -1..1: dist[r].x = seq.x", "rank range -1..1 is outside 0..2^20");
  std::string deepConcat;
  for (int i = 0; i < 5000; ++i) deepConcat += "concat(dim=0, ";
  deepConcat += "seq.x" + std::string(5000, ')');
  expectErrorHas("dist[0].x = " + deepConcat, "nested deeper than 200 levels");
  expectErrorHas("dist[0].x = slice(seq.x, dim=0, start=" + std::string(5000, '(') + "1" + std::string(5000, ')') +
                     ", end=2)",
                 "nested deeper than 200 levels");
  expectErrorHas("dist[0].x = slice(seq.x, dim=0, start=" + std::string(5000, '-') + "1, end=2)",
                 "nested deeper than 200 levels");
  std::string deepFor = "dist[0].x = ";
  for (int i = 0; i < 5000; ++i) deepFor += "sum(for r" + std::to_string(i) + " in tp: ";
  expectErrorHas(deepFor + "seq.x" + std::string(10000, ')'), "nested deeper than 200 levels");
  // Within the limit, nesting parses.
  auto ok = parseRelations("dist[0].x = slice(seq.x, dim=0, start=" + std::string(50, '(') + "1" +
                               std::string(50, ')') + ", end=2)",
                           "r.rel");
  EXPECT_TRUE(ok.ok()) << ok.error().str();
}

TEST(Relation, IntegerEvaluationOverflowIsAnError) {
  IntExpr big = (IntExpr::var("r") * 999999999999999999) * 10;
  auto v = big.eval({{"r", 1}}, nullptr);
  ASSERT_FALSE(v.ok());
  EXPECT_EQ(v.error().id, "integer-overflow");
  EXPECT_EQ(v.error().message, "integer overflow in r*999999999999999999*10");
  auto sum = (IntExpr::var("r") + IntExpr::constant(INT64_MAX)).eval({{"r", 1}}, nullptr);
  ASSERT_FALSE(sum.ok());
  EXPECT_EQ(sum.error().id, "integer-overflow");
  auto diff = (IntExpr::constant(INT64_MIN) - IntExpr::var("r")).eval({{"r", 1}}, nullptr);
  ASSERT_FALSE(diff.ok());
  EXPECT_EQ(diff.error().id, "integer-overflow");
  auto fine = (IntExpr::var("r") * 999999999999999999).eval({{"r", -9}}, nullptr);
  ASSERT_TRUE(fine.ok()) << fine.error().str();
  EXPECT_EQ(*fine, -8999999999999999991);
  EXPECT_EQ(*IntExpr::var("r").modC(7).eval({{"r", INT64_MIN}}, nullptr), 6);
  EXPECT_EQ(*IntExpr::var("r").divC(1).eval({{"r", INT64_MIN}}, nullptr), INT64_MIN);
}

// Names that are not identifiers (ONNX's "fc1.weight", "/fc1/Gemm_output_0")
// are quoted, and print back quoted.
TEST(RelationText, QuotedNames) {
  std::string text =
      "for r in tp: dist[r].\"fc1.weight\" = slice(seq.\"fc1.weight\", dim=0, start=idx(r,tp)*2, end=(idx(r,tp)+1)*2)\n"
      "expect seq.\"/a\\\"b\" = dist[0].\"/a\\\"b\"\n";
  auto f = parseRelations(text, "q.rel");
  ASSERT_TRUE(f.ok()) << f.error().str();
  EXPECT_EQ(f->inputs[0].name, "fc1.weight");
  EXPECT_EQ(f->outputs[0].name, "/a\"b");
  std::string printed = printRelations(*f);
  EXPECT_NE(printed.find("dist[r].\"fc1.weight\" = slice(seq.\"fc1.weight\", dim=0"), std::string::npos) << printed;
  auto again = parseRelations(printed, "printed.rel");
  ASSERT_TRUE(again.ok()) << again.error().str() << "\n" << printed;
  EXPECT_EQ(printRelations(*again), printed);
  EXPECT_EQ(relName("x_1"), "x_1");
  auto u = parseRelations("unrelated \"x.stream\"\n", "u.rel");
  ASSERT_TRUE(u.ok()) << u.error().str();
  EXPECT_EQ(u->unrelated[0].name, "x.stream");
  expectError("dist[0].\"x = seq.x", "r.rel:1:9: unterminated quoted name");
}

TEST(Relation, RebuildConcatShardedTensor) {
  RelationFile f;
  auto rf = parseRelations("for r in tp: dist[r].w = slice(seq.w, dim=1, start=idx(r,tp)*2, end=idx(r,tp)*2+2)\n"
                           "expect seq.w = concat(dim=1, for r in tp: dist[r].w)\n"
                           "expect seq.s = sum(for r in tp: dist[r].w)\n", "r.rel");
  ASSERT_TRUE(rf.ok()) << rf.error().str();
  RankSpace rs = tp(3);
  ir::TensorMap seq{{"w", iota({2, 6})}};
  auto dist = buildDistInputs(*rf, rs, seq);
  ASSERT_TRUE(dist.ok()) << dist.error().str();
  ASSERT_EQ(dist->size(), 3u);
  EXPECT_EQ((*dist)[1].at("w").dims(), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ((*dist)[1].at("w").getAsDouble(0), 2.0);  // row 0, cols 2..3
  EXPECT_EQ((*dist)[2].at("w").getAsDouble(3), 11.0);  // row 1, col 5
  auto back = rebuildSeqOutputs(*rf, rs, *dist);
  ASSERT_TRUE(back.ok()) << back.error().str();
  EXPECT_TRUE(back->at("w").identical(seq.at("w")));
  // sum over ranks of the three [2,2] shards: element 0 = 0 + 2 + 4
  EXPECT_EQ(back->at("s").getAsDouble(0), 6.0);
}

TEST(Relation, InferTypeAndErrors) {
  RankSpace rs = tp(2);
  TypeLookup look;
  look.seq = [](const std::string& n) -> Result<ir::TensorType> {
    return ir::TensorType{ir::DType::F32, {ir::Dim(8), ir::Dim::sym("seq")}};
  };
  look.dist = [](int64_t r, const std::string& n) -> Result<ir::TensorType> {
    return ir::TensorType{ir::DType::F32, {ir::Dim(4), ir::Dim(r == 0 ? 3 : 5)}};
  };
  RelScope s{&rs, 0, {}};
  auto cat = parseRelExpr("concat(dim=1, for r in tp: dist[r].h)");
  ASSERT_TRUE(cat.ok()) << cat.error().str();
  auto t = inferType(**cat, look, s);
  ASSERT_TRUE(t.ok()) << t.error().str();
  EXPECT_EQ(ir::shapeStr(t->shape), "[4, 8]");
  auto sum = parseRelExpr("sum(for r in tp: dist[r].h)");
  auto bad = inferType(**sum, look, s);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message, "sum: part 1 (dist[r].h) has shape [4, 5], part 0 has [4, 3]");
  auto sl = parseRelExpr("slice(seq.x, dim=0, start=4, end=9)");
  auto e = inferType(**sl, look, s);
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.error().message, "slice dim 0 [4, 9) of extent 8 in slice(seq.x, dim=0, start=4, end=9)");
}

TEST(Relation, NestedComprehensionOverTwoAxes) {
  RankSpace rs{ir::Mesh{{{"dp", 2}, {"tp", 2}}}, {}};
  std::vector<ir::TensorMap> dist(4);
  for (int r = 0; r < 4; ++r) {
    ir::Tensor t(ir::DType::F32, {1});
    t.setFromDouble(0, r);
    dist[size_t(r)]["x"] = t;
  }
  auto e = parseRelExpr("concat(dim=0, for d in dp: concat(dim=0, for r in tp: dist[r].x))");
  ASSERT_TRUE(e.ok()) << e.error().str();
  auto v = evaluate(**e, TensorSource{nullptr, &dist}, RelScope{&rs, 0, {}});
  ASSERT_TRUE(v.ok()) << v.error().str();
  ASSERT_EQ(v->numel(), 4);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(v->getAsDouble(i), double(i));
}

TEST(Relation, DuplicateDefinitionIsAnError) {
  auto f = parseRelations("dist[*].x = seq.x\ndist[1].x = seq.x\n", "d.rel");
  ASSERT_TRUE(f.ok());
  auto b = expandInputs(*f, tp(2));
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.error().str(), "d.rel:2: dist[1].x is already defined at d.rel:1");
}

}  // namespace
}  // namespace sp::rewrite

namespace sp::rewrite {
namespace {

// Parts over 4 or more consecutive ranks that differ only in the rank print
// as one comprehension, which parses and expands back to the same parts;
// shorter runs and parts naming several ranks print as they are.
TEST(RelationText, RunsOfRanksPrintAsComprehensions) {
  std::vector<RelPtr> parts, slices;
  for (int64_t r = 0; r < 6; ++r) {
    parts.push_back(Rel::dist(IntExpr::constant(r), "y"));
    slices.push_back(Rel::slice(Rel::dist(IntExpr::constant(r + 2), "x"), 0, IntExpr::constant(0), IntExpr::constant(4)));
  }
  RelPtr big = Rel::sum({Rel::concat(0, parts), Rel::concat(1, slices)});
  std::string text = str(*big);
  EXPECT_EQ(text, "sum(concat(dim=0, for r in 0..5: dist[r].y), concat(dim=1, for r in 2..7: slice(dist[r].x, dim=0, "
                  "start=0, end=4)))");
  auto back = parseRelExpr(text);
  ASSERT_TRUE(back.ok()) << back.error().str();
  auto again = concretize(**back, RelScope{});
  ASSERT_TRUE(again.ok()) << again.error().str();
  EXPECT_TRUE(equal(**again, *big)) << str(**again);

  RelPtr small = Rel::concat(0, {parts[0], parts[1], parts[2]});
  EXPECT_EQ(str(*small), "concat(dim=0, dist[0].y, dist[1].y, dist[2].y)");
  RelPtr mixed = Rel::concat(0, {parts[0], parts[1], parts[2], Rel::dist(IntExpr::constant(4), "y"), parts[5]});
  EXPECT_EQ(str(*mixed), "concat(dim=0, dist[0].y, dist[1].y, dist[2].y, dist[4].y, dist[5].y)");
  RelPtr twoRanks = Rel::concat(0, {Rel::sum({parts[0], parts[1]}), Rel::sum({parts[1], parts[2]}),
                                    Rel::sum({parts[2], parts[3]}), Rel::sum({parts[3], parts[4]})});
  EXPECT_EQ(str(*twoRanks).find("for r"), std::string::npos) << str(*twoRanks);
}

}  // namespace
}  // namespace sp::rewrite

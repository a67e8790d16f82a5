// Lemma matching in the engine: binary ops whose operands broadcast match
// (the prover assumes the IR's numpy typing), and a lemma never applies to
// tensors of a rank its proof does not cover.
#include <gtest/gtest.h>

#include "ir/text.h"
#include "rewrite/engine/engine.h"

namespace sp::rewrite {
namespace {

const char* kProgram = R"(program p {
  world 1
  rank 0 {
    input %a: f32[3, 2]
    input %b: f32[3, 4]
    input %c: f32[2]
    input %d: f32[4]
    input %p: f32[1, 1, 2, 2]
    input %q: f32[1, 1, 2, 3]
    input %u: f32[1, 1, 1, 2, 2]
    input %v: f32[1, 1, 1, 2, 3]
    output %a
  }
}
)";

struct Fixture {
  ir::Program prog;
  LemmaLibrary lib;
  std::vector<Rule> rules;
  Interner in;
  EngineStats stats;
  Fixture(const std::string& rules_text) {
    auto p = ir::parseProgram(kProgram, "p.sp");
    SP_ASSERT(p.ok(), p.ok() ? "" : p.error().str());
    prog = std::move(*p);
    auto ls = parseLemmas(rules_text, "t.rules");
    SP_ASSERT(ls.ok(), ls.ok() ? "" : ls.error().str());
    lib.lemmas = *ls;
    auto st = proveLemmas(lib, {});
    for (const auto& s : st) SP_ASSERT(s.proven, s.name + ": " + s.reason);
    rules = compileRules(lib, st);
  }
  ClassId leaf(Engine& e, const std::string& n) { return e.dist(0, *prog.rank(0).findValue(n)); }
};

TEST(EngineRules, BroadcastBiasOverConcatMatches) {
  Fixture f("add-bias-over-concat-last: add(concat(?a, ?b, dim=-1), concat(?c, ?d, dim=0)) => concat(add(?a, ?c), add(?b, ?d), dim=-1) if rank(?c) == 1 && rank(?d) == 1 && size(?a, -1) == size(?c, 0) && size(?b, -1) == size(?d, 0)\n");
  Engine e(f.in, f.rules, f.stats, f.prog);
  ClassId x = *e.concat(-1, {f.leaf(e, "a"), f.leaf(e, "b")});
  ClassId bias = *e.concat(0, {f.leaf(e, "c"), f.leaf(e, "d")});
  ClassId y = *e.irNodeInfer(ir::OpKind::Add, {}, {x, bias});
  EXPECT_EQ(e.graph().type(y).shape, ir::shapeOf({3, 6}));
  e.saturate(Budget{}, nullptr);
  EXPECT_EQ(f.stats.perLemma["add-bias-over-concat-last"], 1);
  ClassId ya = *e.irNodeInfer(ir::OpKind::Add, {}, {f.leaf(e, "a"), f.leaf(e, "c")});
  ClassId yb = *e.irNodeInfer(ir::OpKind::Add, {}, {f.leaf(e, "b"), f.leaf(e, "d")});
  e.graph().rebuild();
  EXPECT_EQ(e.graph().find(y), e.graph().find(*e.concat(-1, {ya, yb})));
}

TEST(EngineRules, UncoveredRankIsNotMatched) {
  Fixture f("exp-over-concat-last: exp(concat(?a, ?b, dim=-1)) => concat(exp(?a), exp(?b), dim=-1)\n");
  ASSERT_EQ(f.rules.size(), 1u);
  EXPECT_EQ(f.rules[0].ranks, (std::vector<int>{1, 2, 3, 4}));
  Engine e(f.in, f.rules, f.stats, f.prog);
  ClassId five = *e.concat(-1, {f.leaf(e, "u"), f.leaf(e, "v")});  // rank 5: not covered
  e.irNodeInfer(ir::OpKind::Exp, {}, {five});
  e.saturate(Budget{}, nullptr);
  EXPECT_EQ(f.stats.perLemma["exp-over-concat-last"], 0);
  ClassId two = *e.concat(-1, {f.leaf(e, "a"), f.leaf(e, "b")});
  e.irNodeInfer(ir::OpKind::Exp, {}, {two});
  e.saturate(Budget{}, nullptr);
  EXPECT_EQ(f.stats.perLemma["exp-over-concat-last"], 1);
}

// An op variable matches only ops of its trait (cast and not are not
// unary for it) and builds the matched op with the matched attributes; a
// dim variable binds the node's dim. Rank 5 stays uncovered.
TEST(EngineRules, UnarySchemaMatchesOnlyItsTrait) {
  Fixture f("unary-over-concat: ?f:unary(concat(?a, ?b, dim=?d)) => concat(?f(?a), ?f(?b), dim=?d)\n");
  ASSERT_EQ(f.rules.size(), 1u);
  EXPECT_EQ(f.rules[0].ranks, (std::vector<int>{1, 2, 3, 4}));
  Engine e(f.in, f.rules, f.stats, f.prog);
  ClassId a = f.leaf(e, "a");
  ClassId rows = *e.concat(0, {a, a});  // [6, 2]
  e.irNodeInfer(ir::OpKind::Cast, {{"to", ir::DType::F16}}, {rows});
  e.saturate(Budget{}, nullptr);
  EXPECT_EQ(f.stats.perLemma["unary-over-concat"], 0);
  ClassId g = *e.irNodeInfer(ir::OpKind::Gelu, {{"approximate", std::string("tanh")}}, {rows});
  ClassId five = *e.concat(-1, {f.leaf(e, "u"), f.leaf(e, "v")});  // rank 5: not covered
  e.irNodeInfer(ir::OpKind::Sin, {}, {five});
  e.saturate(Budget{}, nullptr);
  EXPECT_EQ(f.stats.perLemma["unary-over-concat"], 1);
  ClassId ga = *e.irNodeInfer(ir::OpKind::Gelu, {{"approximate", std::string("tanh")}}, {a});
  e.graph().rebuild();
  EXPECT_EQ(e.graph().find(g), e.graph().find(*e.concat(0, {ga, ga})));
  ClassId plain = *e.irNodeInfer(ir::OpKind::Gelu, {}, {a});  // other attributes: another op
  e.graph().rebuild();
  EXPECT_NE(e.graph().find(g), e.graph().find(*e.concat(0, {plain, plain})));
}

// A proven lemma whose status lists no ranks (a corrupt or forged status)
// is general by its variables, so it matches nothing.
TEST(EngineRules, GeneralLemmaWithoutProvenRanksNeverMatches) {
  Fixture f("exp-over-concat-last: exp(concat(?a, ?b, dim=-1)) => concat(exp(?a), exp(?b), dim=-1)\n");
  LemmaStatus s;
  s.name = "exp-over-concat-last";
  s.proven = true;
  auto rules = compileRules(f.lib, {s});
  ASSERT_EQ(rules.size(), 1u);
  EXPECT_TRUE(rules[0].general);
  Engine e(f.in, rules, f.stats, f.prog);
  e.irNodeInfer(ir::OpKind::Exp, {}, {*e.concat(-1, {f.leaf(e, "a"), f.leaf(e, "b")})});
  e.saturate(Budget{}, nullptr);
  EXPECT_EQ(f.stats.perLemma["exp-over-concat-last"], 0);
}

// permute(concat(a, b, dim=d), p) is the concat of the permutes along the
// dim p moves d to, for any rank and permutation (engine_permute.cpp), and
// nested concats are pushed through one level per round.
TEST(EngineRules, PermuteMovesThroughConcat) {
  Fixture f("");
  Engine e(f.in, f.rules, f.stats, f.prog);
  ClassId p = f.leaf(e, "p"), q = f.leaf(e, "q");  // [1, 1, 2, 2], [1, 1, 2, 3]
  ClassId pq = *e.concat(-1, {p, q});              // [1, 1, 2, 5]
  ClassId pqp = *e.concat(-1, {pq, p});            // [1, 1, 2, 7]
  const std::vector<int64_t> perm{3, 0, 2, 1};     // dim 3 lands at 0
  ClassId y = *e.permute(pqp, perm);
  EXPECT_EQ(e.graph().type(y).shape, ir::shapeOf({7, 1, 2, 1}));
  e.saturate(Budget{}, nullptr);
  ClassId pp = *e.permute(p, perm), qp = *e.permute(q, perm);
  e.graph().rebuild();
  EXPECT_EQ(e.graph().find(y), e.graph().find(*e.concat(0, {*e.concat(0, {pp, qp}), pp})));
  // The order of the parts is kept: q before p is another tensor.
  auto swapped = e.concat(0, {*e.concat(0, {qp, pp}), pp});
  ASSERT_TRUE(swapped.has_value());
  e.graph().rebuild();
  EXPECT_NE(e.graph().find(y), e.graph().find(*swapped));
}

// slice(concat(x_1..x_n, dim=d), d, s, e) is the concat of the parts [s, e)
// covers, the end ones cut (engine_rules.cpp slicesOfConcats), with no
// lemma at all and in one round, wherever the cut falls: a fused QKV of
// unequal per-rank blocks split into q, k and v.
TEST(EngineRules, SliceOfConcatIsItsCoveredParts) {
  Fixture f("");
  Engine e(f.in, f.rules, f.stats, f.prog);
  ClassId a = f.leaf(e, "a"), b = f.leaf(e, "b");  // [3, 2], [3, 4]
  ClassId cat = *e.concat(1, {a, b, a, b, a});      // [3, 14]: 0 a 2 b 6 a 8 b 12 a 14
  ClassId aligned = *e.slice(cat, 1, 2, 8);         // b, a
  ClassId inner = *e.slice(cat, 1, 3, 5);           // inside the first b
  ClassId across = *e.slice(cat, 1, 1, 10);         // a[1:2], b, a, b[0:2]
  // The expected terms (left-nested chains: associativity views meet
  // them with the step's flat concats), and a cut elsewhere, another
  // tensor of the same shape.
  ClassId wantAligned = *e.concat(1, {b, a});
  ClassId wantInner = *e.slice(b, 1, 1, 3);
  ClassId wantAcross = *e.concat(1, {*e.slice(a, 1, 1, 2), b, a, *e.slice(b, 1, 0, 2)});
  ClassId shifted = *e.concat(1, {*e.slice(a, 1, 0, 1), b, a, *e.slice(b, 1, 0, 2)});
  Budget few;
  few.iterations = 4;
  e.saturate(few, nullptr);
  EXPECT_GT(f.stats.perLemma["engine:slice-of-concat"], 0);
  const EGraph& g = e.graph();
  EXPECT_EQ(g.find(aligned), g.find(wantAligned));
  EXPECT_EQ(g.find(inner), g.find(wantInner));
  EXPECT_EQ(g.find(across), g.find(wantAcross));
  EXPECT_NE(g.find(across), g.find(shifted));
}

// Which lemmas take n-ary concats (Rule::Lift): an op pushed through
// concats whose right side is the concat, sum or add of the op on each
// part; not one whose terms are not the left side's op on the parts
// (operands commuted).
TEST(EngineRules, LiftedLemmasAreTheHomomorphicOnes) {
  Fixture f(
      "exp-over-concat: exp(concat(?a, ?b, dim=-1)) => concat(exp(?a), exp(?b), dim=-1) if rank(?a) == 2\n"
      "contract: matmul(concat(?a, ?b, dim=-1), concat(?c, ?d, dim=-2)) => sum(matmul(?a, ?c), matmul(?b, ?d)) "
      "if rank(?a) == 2 && rank(?b) == 2 && rank(?c) == 2 && rank(?d) == 2 && size(?a, -1) == size(?c, -2)\n"
      "grid: concat(concat(?a, ?b, dim=-2), concat(?c, ?d, dim=-2), dim=-1) => concat(concat(?a, ?c, dim=-1), "
      "concat(?b, ?d, dim=-1), dim=-2) if size(?a, -2) == size(?c, -2) && rank(?a) == 2 && rank(?b) == 2 && "
      "rank(?c) == 2 && rank(?d) == 2\n"
      "reduce-add: reduce_sum(concat(?a, ?b, dim=-1), axes=[-1], keepdims=1) => add(reduce_sum(?a, axes=[-1], "
      "keepdims=1), reduce_sum(?b, axes=[-1], keepdims=1))\n"
      "commuted: add(concat(?a, ?b, dim=-1), concat(?c, ?d, dim=-1)) => concat(add(?c, ?a), add(?d, ?b), dim=-1) "
      "if shape(?a) == shape(?c) && shape(?b) == shape(?d) && rank(?a) == 2 && rank(?b) == 2\n");
  std::map<std::string, bool> lifted;
  for (const Rule& r : f.rules) lifted[r.lemma->name] = r.lift.has_value();
  EXPECT_TRUE(lifted["exp-over-concat"]);
  EXPECT_TRUE(lifted["contract"]);
  EXPECT_TRUE(lifted["grid"]);
  EXPECT_TRUE(lifted["reduce-add"]);  // an add of the terms: their sum, where they have one type
  EXPECT_FALSE(lifted["commuted"]);
}

// A lifted lemma maps an n-part concat to the concat (or sum) of its n
// images in one application, and makes no image of a prefix of the chain
// (the binary views did: O(n^2) per op and chain). Two concats of other
// cut points meet at the cuts they share.
TEST(EngineRules, LiftedLemmaTakesTheWholeChainAtOnce) {
  Fixture f(
      "unary-over-concat: ?f:unary(concat(?a, ?b, dim=?d)) => concat(?f(?a), ?f(?b), dim=?d)\n"
      "contract: matmul(concat(?a, ?b, dim=-1), concat(?c, ?d, dim=-2)) => sum(matmul(?a, ?c), matmul(?b, ?d)) "
      "if rank(?a) == 2 && rank(?b) == 2 && rank(?c) == 2 && rank(?d) == 2 && size(?a, -1) == size(?c, -2)\n");
  Engine e(f.in, f.rules, f.stats, f.prog);
  ClassId a = f.leaf(e, "a"), b = f.leaf(e, "b");  // [3, 2], [3, 4]
  ClassId chain = *e.concat(1, {*e.concat(1, {*e.concat(1, {a, b}), a}), b});  // [3, 12], left-nested
  ClassId y = *e.irNodeInfer(ir::OpKind::Exp, {}, {chain});
  e.saturate(Budget{}, nullptr);
  EXPECT_EQ(f.stats.perLemma["unary-over-concat"], 1);
  ClassId ea = *e.irNodeInfer(ir::OpKind::Exp, {}, {a}), eb = *e.irNodeInfer(ir::OpKind::Exp, {}, {b});
  e.graph().rebuild();
  EXPECT_EQ(e.graph().find(y), e.graph().find(*e.concat(1, {ea, eb, ea, eb})));
  // no exp of the prefix a|b was made
  size_t exps = 0;
  for (ClassId c : e.graph().canonicalClasses())
    for (const ENode& n : e.graph().nodes(c)) exps += n.op == int32_t(ir::OpKind::Exp);
  EXPECT_EQ(exps, 3u);  // exp(chain), exp(a), exp(b)
  // [3, 12] x [12, 3], both cut 2 | 4 | 2 | 4 (the right one nested):
  // the sum of four products.
  ClassId at = *e.permute(a, {1, 0}), bt = *e.permute(b, {1, 0});  // [2, 3], [4, 3]
  ClassId w = *e.concat(0, {*e.concat(0, {at, bt}), *e.concat(0, {at, bt})});
  ClassId z = *e.irNodeInfer(ir::OpKind::MatMul, {}, {chain, w});
  e.saturate(Budget{}, nullptr);
  ClassId aa = *e.irNodeInfer(ir::OpKind::MatMul, {}, {a, at}), bb = *e.irNodeInfer(ir::OpKind::MatMul, {}, {b, bt});
  e.graph().rebuild();
  EXPECT_EQ(e.graph().find(z), e.graph().find(*e.sum({aa, bb, aa, bb})));
  // cut 4 | 2 | 4 | 2 against 4 | 4 | 2 | 2: the shared cuts 4 and 10
  // give three terms
  ClassId uneven = *e.concat(0, {*e.concat(0, {bt, bt}), at, at});  // [4 | 4 | 2 | 2]
  ClassId v = *e.irNodeInfer(ir::OpKind::MatMul, {}, {*e.concat(1, {b, a, b, a}), uneven});  // cuts 4 6 10 12 vs 4 8 10 12
  int64_t before = f.stats.perLemma["contract"];
  e.saturate(Budget{}, nullptr);
  EXPECT_GT(f.stats.perLemma["contract"], before);  // the shared cuts 4 and 10
  ClassId m1 = *e.irNodeInfer(ir::OpKind::MatMul, {}, {b, bt});
  ClassId m2 = *e.irNodeInfer(ir::OpKind::MatMul, {}, {*e.concat(1, {a, b}), *e.concat(0, {bt, at})});
  ClassId m3 = *e.irNodeInfer(ir::OpKind::MatMul, {}, {a, at});
  e.graph().rebuild();
  EXPECT_EQ(e.graph().find(v), e.graph().find(*e.sum({m1, m2, m3})));
}

}  // namespace
}  // namespace sp::rewrite

// Lemma matching in the engine: binary ops whose operands broadcast match
// (the prover assumes the IR's numpy typing), and a lemma never applies to
// tensors of a rank its proof does not cover.
#include <gtest/gtest.h>

#include "ir/text.h"
#include "rewrite/engine.h"

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
  EXPECT_EQ(f.rules[0].ranks, (std::vector<int>{1, 2, 3}));
  Engine e(f.in, f.rules, f.stats, f.prog);
  ClassId four = *e.concat(-1, {f.leaf(e, "p"), f.leaf(e, "q")});  // rank 4: not covered
  e.irNodeInfer(ir::OpKind::Exp, {}, {four});
  e.saturate(Budget{}, nullptr);
  EXPECT_EQ(f.stats.perLemma["exp-over-concat-last"], 0);
  ClassId two = *e.concat(-1, {f.leaf(e, "a"), f.leaf(e, "b")});
  e.irNodeInfer(ir::OpKind::Exp, {}, {two});
  e.saturate(Budget{}, nullptr);
  EXPECT_EQ(f.stats.perLemma["exp-over-concat-last"], 1);
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

}  // namespace
}  // namespace sp::rewrite

// Vocab-parallel lemmas (rewrite/lemmas/vocab.rules): const patterns,
// integer/bool tensors, where, gather and gather_elements in the prover and
// the numeric check; wrong variants (rewrite/testdata/vocab_wrong.rules)
// must stay unproven.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "ir/interpreter.h"
#include "rewrite/lemma/lemma.h"

namespace sp::rewrite {
namespace {

std::string src(const std::string& rel) { return std::string(SP_SOURCE_DIR) + "/" + rel; }

ProveOptions withInterpreter() {
  ProveOptions o;
  o.evalOp = [](ir::OpKind k, const ir::AttrMap& a, const std::vector<ir::Tensor>& in) { return ir::evalOp(k, a, in); };
  return o;
}

// Proves every lemma of rewrite/testdata/FILE (wrong variants): each must be
// refuted; returns the statuses (the table printed).
std::vector<LemmaStatus> expectAllRefuted(const std::string& file, size_t count) {
  std::ifstream in(src("rewrite/testdata/" + file));
  std::stringstream ss;
  ss << in.rdbuf();
  auto ls = parseLemmas(ss.str(), file);
  EXPECT_TRUE(ls.ok()) << ls.error().str();
  if (!ls.ok()) return {};
  auto st = proveLemmas(LemmaLibrary{*ls}, withInterpreter());
  std::cout << renderLemmaTable(st);
  EXPECT_EQ(st.size(), count);
  for (const auto& s : st) {
    EXPECT_FALSE(s.proven) << s.name;
    EXPECT_NE(s.reason.find("refuted"), std::string::npos) << s.name << ": " << s.reason;
  }
  return st;
}

TEST(VocabLemmas, ConstPatternOnTheRightReusesALeftConst) {
  auto ok = parseLemmas("r: add(?x, const(value=?s)) => ?x if ?s == 0\n", "t.rules");
  ASSERT_TRUE(ok.ok()) << ok.error().str();
  EXPECT_EQ((*ok)[0].str(), "r: add(?x, const(value=?s)) => ?x if ?s == 0");
  // A right side may name a constant the left side matched (by its variable).
  auto reuse = parseLemmas("r: add(?x, const(value=?s)) => add(const(value=?s), ?x)\n", "t.rules");
  ASSERT_TRUE(reuse.ok()) << reuse.error().str();
  // Not a literal (the engine builds no constants), nor a variable bound elsewhere.
  for (const char* bad : {"r: add(?x, const(value=?s)) => add(?x, const(value=0))\n",
                          "r: slice(?x, dim=0, start=?s, end=?e) => add(?x, const(value=?s))\n"}) {
    auto rhs = parseLemmas(bad, "t.rules");
    ASSERT_FALSE(rhs.ok()) << bad;
    EXPECT_NE(rhs.error().message.find("const(...) on the right side needs a variable value bound by a const(...)"),
              std::string::npos) << rhs.error().str();
  }
  auto operand = parseLemmas("r: const(?x, value=0) => ?x\n", "t.rules");
  EXPECT_FALSE(operand.ok());
}

TEST(VocabLemmas, IndexVariablesAreIntegersAndMasksBool) {
  auto ls = parseLemmas("r: where(?m, ?x, gather(?w, sub(?ids, const(value=?s)), axis=0)) => ?x\n", "t.rules");
  ASSERT_TRUE(ls.ok()) << ls.error().str();
  auto dt = lemmaVarDTypes((*ls)[0]);
  EXPECT_EQ(dt.at("ids"), ir::DType::I64);
  EXPECT_EQ(dt.at("m"), ir::DType::Bool);
  EXPECT_EQ(dt.count("w"), 0u);
  EXPECT_EQ(dt.count("x"), 0u);
}

TEST(VocabLemmas, LibraryLemmasProvenAndNumericallyOk) {
  auto lib = loadLemmas(src("rewrite/lemmas"));
  ASSERT_TRUE(lib.ok()) << lib.error().str();
  ProveOptions o = withInterpreter();
  for (const auto& l : lib->lemmas)
    if (l.location.rfind("vocab.rules:", 0) == 0) o.only.push_back(l.name);
  ASSERT_GE(o.only.size(), 6u);
  auto st = proveLemmas(*lib, o);
  std::cout << renderLemmaTable(st);
  ASSERT_EQ(st.size(), o.only.size());
  for (const auto& s : st) {
    EXPECT_TRUE(s.proven) << s.name << ": " << s.reason;
    EXPECT_EQ(s.numeric, NumericState::Ok) << s.name << ": " << s.numericNote;
  }
}

TEST(VocabLemmas, WrongLemmasAreNotProven) {
  auto st = expectAllRefuted("vocab_wrong.rules", 8);
  // The interpreter finds the bad masks and the missing zeroing too (ids drawn
  // in range of the sequential table, so the right side is defined).
  for (const auto& s : st)
    if (s.name == "vocab-embedding-end-off-by-one-wrong" || s.name == "vocab-embedding-no-output-mask-wrong" ||
        s.name == "vocab-embedding-swapped-shards-wrong") {
      EXPECT_EQ(s.numeric, NumericState::Failed) << s.name << ": " << s.numericNote;
    }
}

// The merge of adjacent masked picks (any TP) needs adjacent ranges, the
// merged range and local offset right, and zero fills.
TEST(VocabLemmas, WrongFlatMergesAreNotProven) { expectAllRefuted("vocab_merge_wrong.rules", 5); }

}  // namespace
}  // namespace sp::rewrite

// Text IR tests: golden files (tests/golden/text), exact round trips, every
// diagnostic, and a small fuzzer. Refresh the expected files with
//   SP_UPDATE_GOLDEN=1 build/ir/ir_tests --gtest_filter='Text*'
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <sstream>

#include "ir/golden_test_util.h"
#include "ir/text.h"
#include "ir/text_lexer.h"
#include "ir/text_reader.h"

namespace sp::ir {
namespace {

namespace fs = std::filesystem;

fs::path goldenDir() { return fs::path(SP_SOURCE_DIR) / "tests" / "golden" / "text"; }

using test::checkGolden;
using test::readFile;

// Stems of dir/*.sp, sorted.
std::vector<std::string> spFiles(const fs::path& dir) {
  std::vector<std::string> out;
  if (!fs::exists(dir)) return out;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".sp") out.push_back(e.path().stem().string());
  std::sort(out.begin(), out.end());
  return out;
}

std::string errStr(const Error& e) { return e.id + " " + e.str(); }

std::string testName(const ::testing::TestParamInfo<std::string>& info) {
  std::string n = info.param;
  for (char& c : n)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return n;
}

// Structural equality; source locations compare by their printed form (text
// positions are not part of a graph's printed identity).
std::string graphDiff(const Graph& a, const Graph& b) {
  if (a.name() != b.name()) return "name " + a.name() + " vs " + b.name();
  if (a.values().size() != b.values().size()) return "value count";
  for (size_t i = 0; i < a.values().size(); ++i) {
    const Value& x = a.values()[i];
    const Value& y = b.values()[i];
    if (x.name != y.name || !(x.type == y.type) || x.kind != y.kind || x.producer != y.producer ||
        x.outIndex != y.outIndex || formatLoc(x.loc) != formatLoc(y.loc))
      return "value " + x.name + " vs " + y.name;
  }
  if (a.nodes().size() != b.nodes().size()) return "node count";
  for (size_t i = 0; i < a.nodes().size(); ++i) {
    const Node& x = a.nodes()[i];
    const Node& y = b.nodes()[i];
    if (x.op != y.op || x.name != y.name || x.inputs != y.inputs || x.outputs != y.outputs ||
        formatLoc(x.loc) != formatLoc(y.loc) || x.attrs.size() != y.attrs.size())
      return "node " + x.name + " vs " + y.name;
    for (const auto& [k, v] : x.attrs) {
      auto it = y.attrs.find(k);
      if (it == y.attrs.end() || kindOf(v) != kindOf(it->second) ||
          formatAttr(v) != formatAttr(it->second))
        return "node " + x.name + " attribute " + k;
      if (auto* t = std::get_if<Tensor>(&v); t && !t->identical(std::get<Tensor>(it->second))) {
        bool nan = false;
        for (int64_t e = 0; e < t->numel(); ++e) nan |= std::isnan(t->getAsDouble(e));
        if (!nan) return "node " + x.name + " tensor bits of " + k;
      }
    }
  }
  if (a.inputs() != b.inputs() || a.params() != b.params() || a.outputs() != b.outputs())
    return "inputs, params or outputs";
  for (ValueId p : a.params()) {
    const Tensor* x = a.paramData(p);
    const Tensor* y = b.paramData(p);
    if ((x == nullptr) != (y == nullptr) || (x && !x->identical(*y))) return "data of " + a.value(p).name;
  }
  return "";
}

std::string moduleDiff(const Module& a, const Module& b) {
  if (a.index() != b.index()) return "module kind";
  if (auto* g = std::get_if<Graph>(&a)) return graphDiff(*g, std::get<Graph>(b));
  const Program& p = std::get<Program>(a);
  const Program& q = std::get<Program>(b);
  if (p.worldSize() != q.worldSize() || p.namedGroups() != q.namedGroups()) return "world or groups";
  if (p.mesh().axes.size() != q.mesh().axes.size()) return "mesh";
  for (size_t i = 0; i < p.mesh().axes.size(); ++i)
    if (p.mesh().axes[i].name != q.mesh().axes[i].name || p.mesh().axes[i].size != q.mesh().axes[i].size)
      return "mesh axis";
  for (int64_t r = 0; r < p.worldSize(); ++r)
    if (auto d = graphDiff(p.rank(r), q.rank(r)); !d.empty()) return "rank " + std::to_string(r) + ": " + d;
  return "";
}

// ---- golden files: valid inputs print to <name>.expected ----

class TextGoldenValid : public ::testing::TestWithParam<std::string> {};

TEST_P(TextGoldenValid, PrintsAndRoundTrips) {
  std::string file = GetParam() + ".sp";
  auto m = parseModule(readFile(goldenDir() / file), file);
  ASSERT_TRUE(m.ok()) << errStr(m.error());
  std::string printed = printModule(*m);
  checkGolden(goldenDir() / (GetParam() + ".expected"), printed);
  auto again = parseModule(printed, GetParam() + ".expected");
  ASSERT_TRUE(again.ok()) << errStr(again.error());
  EXPECT_EQ(printModule(*again), printed);
  EXPECT_EQ(moduleDiff(*m, *again), "");
}

INSTANTIATE_TEST_SUITE_P(Text, TextGoldenValid, ::testing::ValuesIn(spFiles(goldenDir())), testName);

// ---- golden files: each error input gives errors/<name>.expected ----

class TextGoldenError : public ::testing::TestWithParam<std::string> {};

TEST_P(TextGoldenError, ReportsDiagnostic) {
  std::string file = GetParam() + ".sp";
  auto m = parseModule(readFile(goldenDir() / "errors" / file), file);
  ASSERT_FALSE(m.ok()) << "parsed without error:\n" << printModule(*m);
  checkGolden(goldenDir() / "errors" / (GetParam() + ".expected"), errStr(m.error()) + "\n");
}

INSTANTIATE_TEST_SUITE_P(Text, TextGoldenError, ::testing::ValuesIn(spFiles(goldenDir() / "errors")),
                         testName);

TEST(TextGolden, CoversEveryDiagnostic) {
  std::set<std::string> ids;
  for (const auto& stem : spFiles(goldenDir() / "errors")) {
    std::string exp = readFile(goldenDir() / "errors" / (stem + ".expected"));
    ids.insert(exp.substr(0, exp.find(' ')));
    EXPECT_NE(exp.find(stem + ".sp:"), std::string::npos) << stem << ": error has no file:line:col";
  }
  for (const char* id :
       {"unknown-op", "unknown-attr", "attr-kind", "undefined-value", "duplicate-name", "type-mismatch",
        "unexpected-eof", "bad-dim", "unknown-group", "unterminated-string", "unexpected-char",
        "missing-attr", "duplicate-attr", "unknown-dtype", "bad-tensor", "bad-literal", "int-range",
        "bad-number", "bad-escape", "unexpected-token", "cycle", "arity", "shape-mismatch",
        "missing-rank", "duplicate-rank", "mesh-size", "late-declaration", "bad-peer", "bad-group",
        "bad-world", "duplicate-axis", "missing-world", "bad-rank-range", "float-range",
        "duplicate-declaration", "bad-location"})
    EXPECT_TRUE(ids.count(id)) << "no error golden for " << id;
  EXPECT_GE(spFiles(goldenDir()).size(), 8u);
}

// ---- printer details ----

TEST(TextFormat, FloatsAreShortestAndAlwaysFloats) {
  EXPECT_EQ(formatFloat(1.0), "1.0");
  EXPECT_EQ(formatFloat(-0.0), "-0.0");
  EXPECT_EQ(formatFloat(0.1), "0.1");
  EXPECT_EQ(formatFloat(1e-05), "1e-05");
  EXPECT_EQ(formatFloat(1e22), "1e+22");
  EXPECT_EQ(formatFloat(123456.0), "123456.0");
  EXPECT_EQ(formatFloat(5e-324), "5e-324");
  EXPECT_EQ(formatFloat(-INFINITY), "-inf");
  EXPECT_EQ(formatFloat(NAN), "nan");
}

TEST(TextFormat, NamesQuoteWhenNeeded) {
  EXPECT_EQ(formatValueName("x"), "%x");
  EXPECT_EQ(formatValueName("layers.0/attn:q"), "%layers.0/attn:q");
  EXPECT_EQ(formatValueName("x:"), "%\"x:\"");
  EXPECT_EQ(formatValueName("a b\"\n\x01"), "%\"a b\\\"\\n\\x01\"");
  EXPECT_EQ(formatDim(Dim::sym("n tok") * Dim(4)), "4*\"n tok\"");
  EXPECT_EQ(formatType({DType::BF16, {Dim(2), Dim::sym("seq") * Dim::sym("batch")}}),
            "bf16[2, batch*seq]");
  EXPECT_EQ(formatLoc(SourceLoc{"a.py", 3, 0, ""}), "@ \"a.py\":3");
  EXPECT_EQ(formatLoc(SourceLoc{"", 0, 0, "MatMul_3"}), "@ node \"MatMul_3\"");
  EXPECT_EQ(formatLoc(SourceLoc{"m.sp", 3, 5, ""}), "");  // a text position
}

TEST(TextFormat, FloatsAttrKindParsesEveryLiteral) {
  auto toks = text::lex("[1, 2.5, -inf, nan, -0.0] []", "t.sp");
  ASSERT_TRUE(toks.ok());
  text::TokenReader r(std::move(*toks), "t.sp");
  AttrSpec spec{"xs", AttrKind::Floats, std::nullopt};
  auto v = r.attrValue(spec, "test");
  ASSERT_TRUE(v.ok()) << errStr(v.error());
  EXPECT_EQ(formatAttr(*v), "[1.0, 2.5, -inf, nan, -0.0]");
  auto empty = r.attrValue(spec, "test");
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ(kindOf(*empty), AttrKind::Floats);
  auto bad = text::TokenReader(*text::lex("[1, \"a\"]", "t.sp"), "t.sp").attrValue(spec, "test");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(errStr(bad.error()), "attr-kind t.sp:1:5: attribute 'xs' of test must be floats, got string \"a\"");
}

TEST(TextLexer, NamesNumbersAndPositions) {
  auto toks = text::lex("%a:0: f32 %\"b c\" 0..3 -7 2.5e3 -inf # c\n  @", "t.sp");
  ASSERT_TRUE(toks.ok()) << errStr(toks.error());
  const auto& t = *toks;
  ASSERT_EQ(t.size(), 12u);
  EXPECT_EQ(t[0].kind, text::Tok::Value);
  EXPECT_EQ(t[0].text, "a:0");
  EXPECT_TRUE(t[1].isPunct(":"));
  EXPECT_EQ(t[3].text, "b c");
  EXPECT_EQ(t[4].intValue, 0);
  EXPECT_TRUE(t[5].isPunct(".."));
  EXPECT_EQ(t[7].intValue, -7);
  EXPECT_EQ(t[8].kind, text::Tok::Float);
  EXPECT_EQ(t[9].text, "-inf");
  EXPECT_EQ(t[10].line, 2);
  EXPECT_EQ(t[10].col, 3);
  EXPECT_EQ(t[11].kind, text::Tok::Eof);
}

// ---- programmatic graphs round-trip exactly ----

Tensor randomBits(DType dt, int64_t n, std::mt19937_64& rng) {
  Tensor t(dt, {n});
  for (size_t i = 0; i < t.nbytes(); ++i) t.mutableData<uint8_t>()[i] = uint8_t(rng());
  // NaN payloads are not preserved by the format: replace NaNs.
  for (int64_t i = 0; i < n; ++i)
    if (std::isnan(t.getAsDouble(i))) t.setFromDouble(i, 1.5);
  return t;
}

TEST(TextRoundTrip, BuiltGraphWithRandomTensorsIsExact) {
  std::mt19937_64 rng(42);
  GraphBuilder b("built graph");
  ASSERT_TRUE(b.addInput("in put", {DType::F32, {Dim::sym("n"), Dim(4)}}, SourceLoc{"x.py", 7, 0, ""}).ok());
  ASSERT_TRUE(b.addParam("w", {DType::F64, {Dim(64)}}, randomBits(DType::F64, 64, rng)).ok());
  int k = 0;
  for (DType dt : kAllDTypes) {
    if (dt == DType::Bool) continue;
    std::string name = "c" + std::to_string(k++);
    ASSERT_TRUE(b.addNode(OpKind::Constant, {}, {name}, {{"value", randomBits(dt, 257, rng)}}).ok());
  }
  ASSERT_TRUE(b.addNode(OpKind::Clip, {"in put"}, {"clipped"}, {{"min", -0.0}, {"max", 1e-310}},
                        SourceLoc{"", 0, 0, "Clip_1"}, "clip node")
                  .ok());
  ASSERT_TRUE(b.addOutput("clipped").ok());
  ASSERT_TRUE(b.addOutput("c0").ok());
  auto g = std::move(b).finish();
  ASSERT_TRUE(g.ok()) << errStr(g.error());
  std::string text = printGraph(*g);
  EXPECT_NE(text.find("graph \"built graph\" {"), std::string::npos);
  EXPECT_NE(text.find("{min = -0.0, max = 1e-310} as \"clip node\"  @ node \"Clip_1\""), std::string::npos);
  auto back = parseGraph(text, "built.sp");
  ASSERT_TRUE(back.ok()) << errStr(back.error());
  EXPECT_EQ(graphDiff(*g, *back), "");
  EXPECT_EQ(printGraph(*back), text);
}

TEST(TextRoundTrip, ZeroOutputNodesKeepTheirNames) {
  Mesh mesh;
  ProgramBuilder pb(2, mesh);
  for (int64_t r = 0; r < 2; ++r) {
    GraphBuilder b("stage");
    ASSERT_TRUE(b.addInput("x", {DType::F32, {Dim(2)}}).ok());
    // Explicit names differ from the default "send_<index>".
    ASSERT_TRUE(b.addNode(OpKind::Send, {"x"}, {}, {{"peer", int64_t(1 - r)}}, {}, "tx").ok());
    ASSERT_TRUE(b.addNode(OpKind::Recv, {}, {"y"},
                          {{"peer", int64_t(1 - r)}, {"dtype", DType::F32}, {"shape", Shape{Dim(2)}}})
                    .ok());
    ASSERT_TRUE(b.addNode(OpKind::Send, {"y"}, {}, {{"peer", int64_t(1 - r)}, {"tag", int64_t(1)}}).ok());
    ASSERT_TRUE(pb.setRank(r, std::move(b)).ok());
  }
  auto p = std::move(pb).finish();
  ASSERT_TRUE(p.ok()) << errStr(p.error());
  std::string text = printProgram(*p);
  EXPECT_NE(text.find("send(%x) {peer = 1} as \"tx\""), std::string::npos) << text;
  EXPECT_NE(text.find("send(%y) {peer = 1, tag = 1}\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("mesh"), std::string::npos) << "the implicit world mesh is not printed";
  auto back = parseProgram(text, "p.sp");
  ASSERT_TRUE(back.ok()) << errStr(back.error());
  EXPECT_EQ(moduleDiff(Module(std::move(*p)), Module(std::move(*back))), "");
}

TEST(TextRoundTrip, IdenticalRanksFoldAndUnfold) {
  std::string text = readFile(goldenDir() / "mlp_tp2.sp");
  auto p = parseProgram(text, "mlp_tp2.sp");
  ASSERT_TRUE(p.ok()) << errStr(p.error());
  ASSERT_EQ(p->worldSize(), 2);
  EXPECT_EQ(printGraph(p->rank(0)), printGraph(p->rank(1)));
  EXPECT_EQ(p->rank(1).name(), "mlp_tp2");
  EXPECT_NE(printProgram(*p).find("rank 0..1 {"), std::string::npos);
}

// A `rank a..b` body is built once and shared (one rank class), unless a
// collective sees another group size on some ranks; errors that depend on
// the rank (a peer, a named group) are still found on the rank they concern.
TEST(ProgramClasses, OneBodyIsOneGraph) {
  auto p = parseProgram(R"(program p {
  world 1024
  mesh [dp = 4, tp = 256]
  rank 0..1023 {
    input %x: f32[2, 8]
    %g: f32[512, 8] = all_gather(%x) {group = "tp", dim = 0}
    %y: f32[512, 8] = all_reduce(%g) {group = "dp"}
    output %y
  }
}
)", "p.sp");
  ASSERT_TRUE(p.ok()) << errStr(p.error());
  EXPECT_EQ(p->numClasses(), 1);
  EXPECT_EQ(&p->rank(0), &p->rank(1023));
  EXPECT_EQ(p->classRanks(0).size(), 1024u);
  EXPECT_NE(printProgram(*p).find("rank 0..1023 {"), std::string::npos);

  // Group sizes differ: ranks 0-1 gather over 2 ranks, ranks 2-4 over 3.
  auto q = parseProgram(R"(program q {
  world 5
  group g = [[0, 1], [2, 3, 4]]
  rank 0..1 {
    input %x: f32[1, 4]
    %y: f32[2, 4] = all_gather(%x) {group = "g", dim = 0}
    output %y
  }
  rank 2..4 {
    input %x: f32[1, 4]
    %y: f32[3, 4] = all_gather(%x) {group = "g", dim = 0}
    output %y
  }
}
)", "q.sp");
  ASSERT_TRUE(q.ok()) << errStr(q.error());
  EXPECT_EQ(q->numClasses(), 2);
  EXPECT_TRUE(q->sameClass(2, 4));
  EXPECT_FALSE(q->sameClass(1, 2));
  // One body, two sizes: the body is built for each and its declared type
  // is wrong on ranks 2-4.
  auto bad = parseProgram(R"(program q {
  world 5
  group g = [[0, 1], [2, 3, 4]]
  rank 0..4 {
    input %x: f32[1, 4]
    %y: f32[2, 4] = all_gather(%x) {group = "g", dim = 0}
    output %y
  }
}
)", "bad.sp");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("rank 2:"), std::string::npos) << errStr(bad.error());
  // A peer that is the rank itself on one rank of a shared body.
  auto self = parseProgram(R"(program s {
  world 3
  rank 0..2 {
    input %x: f32[4]
    send(%x) {peer = 1}
  }
}
)", "self.sp");
  ASSERT_FALSE(self.ok());
  EXPECT_EQ(self.error().id, "bad-peer");
  EXPECT_NE(self.error().message.find("rank 1:"), std::string::npos) << errStr(self.error());
  // A rank range past the world is reported at the first rank outside it.
  auto past = parseProgram("program t {\n  world 2\n  rank 0..100000000000 {\n    input %x: f32[4]\n  }\n}\n", "t.sp");
  ASSERT_FALSE(past.ok());
  EXPECT_EQ(past.error().id, "bad-rank");
  EXPECT_NE(past.error().message.find("rank 2 is outside"), std::string::npos) << errStr(past.error());
}

// ---- locations ----

TEST(TextLocations, NodesCarryTextPositionsOrExplicitLocations) {
  auto g = parseGraph("graph g {\n  input %x: f32[2]\n  %y = neg(%x)\n  %z = neg(%y) @ \"m.py\":9\n"
                      "  output %z\n}\n",
                      "g.sp");
  ASSERT_TRUE(g.ok()) << errStr(g.error());
  EXPECT_EQ(g->node(0).loc.str(), "g.sp:3:3");
  EXPECT_EQ(g->node(1).loc.str(), "m.py:9");
  EXPECT_EQ(g->value(0).loc.str(), "g.sp:2:3");
  std::string printed = printGraph(*g);
  EXPECT_NE(printed.find("%z: f32[2] = neg(%y)  @ \"m.py\":9\n"), std::string::npos) << printed;
  EXPECT_EQ(printed.find("g.sp"), std::string::npos) << printed;
}

TEST(TextLocations, SharedExplicitLocationIsKept) {
  // Two nodes share the source line, so the error keeps it rather than guess.
  auto g = parseGraph("graph g {\n  input %x: f32[2]\n  %y = neg(%x) @ \"m.py\":9\n"
                      "  %z: f32[3] = neg(%y) @ \"m.py\":9\n}\n",
                      "g.sp");
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.error().location, "m.py:9");
  EXPECT_EQ(g.error().id, "type-mismatch");
}

// ---- robustness: mutated inputs give errors or valid graphs, never crash ----

TEST(TextFuzz, MutationsNeverCrash) {
  std::mt19937 rng(1234);
  const std::string junk = "{}()[]<>,=:;@*%\"#.-0123456789azAZ_\n \\\x80\xff";
  int parsed = 0, failed = 0;
  for (const auto& stem : spFiles(goldenDir())) {
    std::string src = readFile(goldenDir() / (stem + ".sp"));
    for (int iter = 0; iter < 150; ++iter) {
      std::string s = src;
      int edits = 1 + int(rng() % 3);
      for (int e = 0; e < edits && !s.empty(); ++e) {
        size_t at = rng() % s.size();
        switch (rng() % 4) {
          case 0: s.resize(at); break;
          case 1: s[at] = junk[rng() % junk.size()]; break;
          case 2: s[at] = char(rng() % 256); break;
          default: s.erase(at, 1 + rng() % 8); break;
        }
      }
      auto m = parseModule(s, "fuzz.sp");
      if (!m.ok()) {
        ++failed;
        EXPECT_FALSE(m.error().id.empty());
        EXPECT_EQ(m.error().location.rfind("fuzz.sp:", 0), 0u)
            << errStr(m.error()) << "\nfor input:\n" << s;
        continue;
      }
      ++parsed;
      std::string printed = printModule(*m);
      auto again = parseModule(printed, "again.sp");
      ASSERT_TRUE(again.ok()) << errStr(again.error()) << "\nprinted:\n" << printed;
      EXPECT_EQ(printModule(*again), printed);
    }
  }
  EXPECT_GT(failed, 0);
  EXPECT_GT(parsed, 0);
}

}  // namespace
}  // namespace sp::ir

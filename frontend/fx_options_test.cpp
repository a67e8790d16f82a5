// Import options: lifted tensor constants (flags, source literals, the
// known-sites table), c10d group mapping (flags, mesh files), and the exact
// simplifications the verifier relies on.
#include <gtest/gtest.h>

#include <filesystem>

#include "frontend/fx_constants.h"
#include "frontend/fx_groups.h"
#include "frontend/fx_import.h"
#include "frontend/fx_test_util.h"
#include "frontend/load.h"
#include "ir/interpreter.h"

namespace sp::frontend {
namespace {

using ir::DType;
using fx_test::kData;
using fx_test::typed;
using fx_test::values;

std::map<std::string, int> opCounts(const ir::Graph& g) {
  std::map<std::string, int> c;
  for (const auto& n : g.nodes()) ++c[std::string(ir::opName(n.op))];
  return c;
}

// ------------------------------------------------------------------ tensor constants

const char* kConstants = R"(
def forward(self, t: "i64[4]", m: "b8[4]", x: "f32[4]"):
    # File: /opt/Megatron-LM/megatron/core/tensor_parallel/cross_entropy.py:245 in f, code: return _VocabParallelCrossEntropy.apply(logits, target, 0.0)
    _tensor_constant0 = self._tensor_constant0
    lift_fresh_copy: "i64[]" = torch.ops.aten.lift_fresh_copy.default(_tensor_constant0);  _tensor_constant0 = None
    index_put: "i64[4]" = torch.ops.aten.index_put.default(t, [m], lift_fresh_copy)
    # File: /src/model.py:9 in forward, code: x[mask] = -2.5
    _tensor_constant1 = self._tensor_constant1
    lift_fresh_copy_1: "f32[]" = torch.ops.aten.lift_fresh_copy.default(_tensor_constant1)
    index_put_1: "f32[4]" = torch.ops.aten.index_put.default(x, [m], lift_fresh_copy_1)
    # File: /src/model.py:12 in forward, code: z = x + self.offset
    _tensor_constant2 = self._tensor_constant2
    lift_fresh_copy_2: "f32[]" = torch.ops.aten.lift_fresh_copy.default(_tensor_constant2)
    add: "f32[4]" = torch.ops.aten.add.Tensor(x, lift_fresh_copy_2)
    return (index_put, index_put_1, add)
)";

struct Imported {
  Result<ir::Graph> g;
  std::vector<FxConstantNote> notes;
};

Imported importConstants(FxOptions opts) {
  Imported r{makeError("unset", ""), {}};
  opts.constantNotes = &r.notes;
  r.g = importFxText(kConstants, "c.py", opts);
  return r;
}

TEST(FxConstants, LiteralsAndKnownSitesResolveTheRestStayParameters) {
  auto r = importConstants({});
  ASSERT_TRUE(r.g.ok()) << r.g.error().str();
  ASSERT_EQ(r.notes.size(), 3u);
  EXPECT_EQ(r.notes[0].value, 0.0);
  EXPECT_NE(r.notes[0].origin.find("known site megatron/core/tensor_parallel/cross_entropy.py:245"), std::string::npos)
      << r.notes[0].str();
  EXPECT_EQ(r.notes[1].value, -2.5);
  EXPECT_NE(r.notes[1].origin.find("x[mask] = -2.5"), std::string::npos) << r.notes[1].str();
  EXPECT_FALSE(r.notes[2].value.has_value());
  EXPECT_NE(r.notes[2].str().find("--fx-constant _tensor_constant2=VALUE"), std::string::npos) << r.notes[2].str();
  EXPECT_EQ(r.notes[2].line, 13);
  // The unresolved one is a parameter named after the attribute.
  ASSERT_EQ(r.g->params().size(), 1u);
  EXPECT_EQ(r.g->value(r.g->params()[0]).name, "_tensor_constant2");
  auto out = ir::runGraph(*r.g, {{"t", typed(DType::I64, {4}, {5, 6, 7, 8})},
                                 {"m", typed(DType::Bool, {4}, {1, 0, 0, 1})},
                                 {"x", typed(DType::F32, {4}, {1, 2, 3, 4})},
                                 {"_tensor_constant2", typed(DType::F32, {}, {10})}});
  ASSERT_TRUE(out.ok()) << out.error().str();
  EXPECT_EQ(values(out->at("index_put")), (std::vector<double>{0, 6, 7, 0}));
  EXPECT_EQ(values(out->at("index_put_1")), (std::vector<double>{-2.5, 2, 3, -2.5}));
}

TEST(FxConstants, FlagsWinAndPerFileFlagsWinOverGlobalOnes) {
  FxOptions opts;
  opts.constantValues["_tensor_constant2"] = 4;
  opts.constantValues["c.py:_tensor_constant2"] = 7;
  opts.constantValues["_tensor_constant1"] = 1;
  opts.constantValues["other.py:_tensor_constant0"] = 3;  // another capture: ignored
  auto r = importConstants(opts);
  ASSERT_TRUE(r.g.ok()) << r.g.error().str();
  EXPECT_TRUE(r.g->params().empty());
  EXPECT_EQ(r.notes[0].value, 0.0);
  EXPECT_EQ(r.notes[1].value, 1.0);
  EXPECT_EQ(r.notes[1].origin, "--fx-constant _tensor_constant1");
  EXPECT_EQ(r.notes[2].value, 7.0);
  EXPECT_EQ(r.notes[2].origin, "--fx-constant c.py:_tensor_constant2");
}

TEST(FxConstants, ValuesThatDoNotFitTheDtypeOrADisabledTableLeaveThemUnknown) {
  FxOptions opts;
  opts.constantValues["_tensor_constant0"] = 0.5;  // an i64 constant
  opts.constantSites = "";
  auto r = importConstants(opts);
  ASSERT_TRUE(r.g.ok()) << r.g.error().str();
  EXPECT_FALSE(r.notes[0].value.has_value());
  EXPECT_NE(r.notes[0].origin.find("is not a i64 value"), std::string::npos) << r.notes[0].str();
  opts.constantValues.clear();
  r = importConstants(opts);
  EXPECT_FALSE(r.notes[0].value.has_value()) << "no table, no literal: " << r.notes[0].str();
  EXPECT_TRUE(r.notes[1].value.has_value());
}

TEST(FxConstants, SourceLiteralsAndSitesFiles) {
  EXPECT_EQ(fx::assignedLiteral("masked_input[input_mask] = 0"), 0.0);
  EXPECT_EQ(fx::assignedLiteral("output_parallel[input_mask, :] = 0.0"), 0.0);
  EXPECT_EQ(fx::assignedLiteral("a.b[m] = -1e-3"), -1e-3);
  EXPECT_FALSE(fx::assignedLiteral("x[m] = y"));
  EXPECT_FALSE(fx::assignedLiteral("x[m] += 1"));
  EXPECT_FALSE(fx::assignedLiteral("x = 0"));
  EXPECT_FALSE(fx::assignedLiteral("f(x[m] = 1)"));
  auto ok = fx::parseConstantSites("a/b.py:3 i64 0  # why\n\n# c\nb.py:3 f32 -0.5\n", "s.txt");
  ASSERT_TRUE(ok.ok()) << ok.error().str();
  EXPECT_EQ(ok->size(), 2u);
  auto dup = fx::parseConstantSites("a.py:3 i64 0\na.py:3 i64 1\n", "s.txt");
  ASSERT_FALSE(dup.ok());
  EXPECT_EQ(dup.error().location, "s.txt:2");
  auto bad = fx::parseConstantSites("a.py:3 i64 0.5\n", "s.txt");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().location, "s.txt:1");
  auto noLine = fx::parseConstantSites("a.py i64 0\n", "s.txt");
  ASSERT_FALSE(noLine.ok());
  auto shipped = fx::loadConstantSites(defaultConstantSitesPath());
  ASSERT_TRUE(shipped.ok()) << shipped.error().str();
  EXPECT_EQ(shipped->size(), 4u);
}

// ------------------------------------------------------------------ groups

Result<ir::Program> mlpTp(const FxOptions& opts) {
  return importFxProgram({kData + "mlp_tp.r0.py", kData + "mlp_tp.r1.py"}, opts);
}

TEST(FxGroups, MeshFileAndFlagsMapGroupIds) {
  FxOptions opts;
  ASSERT_TRUE(parseMeshText(opts, "# two-way TP\nmesh tp=2\ngroup 3 = tp   # Megatron TP group\n", "m.txt").ok());
  auto p = mlpTp(opts);
  ASSERT_TRUE(p.ok()) << p.error().str();
  const ir::Graph& r0 = p->rank(0);
  EXPECT_EQ(opCounts(r0)["all_reduce"], 1);
  for (const auto& n : r0.nodes())
    if (n.op == ir::OpKind::AllReduce) {
      EXPECT_EQ(std::get<std::string>(n.attrs.at("group")), "tp");
    }
  FxFlags flags;
  flags.groups = {"3=[0, 1]"};
  auto fo = fxOptionsFromFlags(flags);
  ASSERT_TRUE(fo.ok()) << fo.error().str();
  EXPECT_EQ(fo->groups.at("3"), "c10d_3");
  p = mlpTp(*fo);
  ASSERT_TRUE(p.ok()) << p.error().str();
}

TEST(FxGroups, UnmappedIdsSizeMismatchesAndBadMeshesAreErrors) {
  FxOptions opts;
  opts.groups["9"] = "world";
  auto p = mlpTp(opts);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.error().id, "fx-group");
  EXPECT_NE(p.error().message.find("c10d group '3' is not mapped"), std::string::npos) << p.error().str();
  EXPECT_NE(p.error().message.find("--fx-group 3=AXIS"), std::string::npos) << p.error().str();
  // all_gather_into_tensor says its group has 2 ranks; 'self' has 1.
  FxOptions self;
  self.groups["5"] = "self";
  auto c = importFxProgram({kData + "collectives.r0.py", kData + "collectives.r1.py"}, self);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.error().message.find("has 2 ranks in the capture but maps to 'self' of 1 ranks"), std::string::npos)
      << c.error().str();
  FxOptions four;
  four.mesh.axes = {{"tp", 4}};
  p = mlpTp(four);
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.error().id, "fx-mesh");
  for (auto [text, where] : std::vector<std::pair<std::string, std::string>>{
           {"mesh tp=0\n", "m.txt:1"}, {"\ngroup 3\n", "m.txt:2"}, {"mesh tp=2\nmesh dp=2\n", "m.txt:2"},
           {"bogus\n", "m.txt:1"}, {"group 3 = [0, x]\n", "m.txt:1"}, {"group 3 = tp\ngroup 3 = dp\n", "m.txt:2"}}) {
    FxOptions o;
    auto st = parseMeshText(o, text, "m.txt");
    ASSERT_FALSE(st.ok()) << text;
    EXPECT_EQ(st.error().location, where) << st.error().str();
  }
  FxFlags bad;
  bad.constants = {"_tensor_constant0"};
  EXPECT_FALSE(fxOptionsFromFlags(bad).ok());
}

TEST(FxGroups, OneRankGroupsAreTheIdentity) {
  FxOptions opts;
  opts.groups["3"] = "self";
  auto p = mlpTp(opts);
  ASSERT_TRUE(p.ok()) << p.error().str();
  EXPECT_EQ(opCounts(p->rank(0))["all_reduce"], 0);
  // A single graph sees a world of one rank: every group has one rank.
  auto g = importFxGraph(kData + "mlp_tp.r0.py");
  ASSERT_TRUE(g.ok()) << g.error().str();
  EXPECT_EQ(opCounts(*g)["all_reduce"], 0);
  // ... also under a program's mesh, mapped or not (the sequential capture
  // of a verify run shares the distributed capture's mesh file).
  FxOptions mesh;
  ASSERT_TRUE(parseMeshText(mesh, "mesh tp=2\ngroup 12 = tp\n", "m.txt").ok());
  g = importFxGraph(kData + "mlp_tp.r0.py", mesh);
  ASSERT_TRUE(g.ok()) << g.error().str();
  EXPECT_EQ(opCounts(*g)["all_reduce"], 0);
  mesh.groups["3"] = "tp";
  g = importFxGraph(kData + "mlp_tp.r0.py", mesh);
  ASSERT_TRUE(g.ok()) << g.error().str();
  EXPECT_EQ(opCounts(*g)["all_reduce"], 0);
  // The same through load.h, as `verify --seq DIR --mesh FILE` loads it: a
  // directory of one rank file ignores the program's mesh.
  auto dir = std::filesystem::temp_directory_path() / "sp_fx_one_rank";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  std::filesystem::copy_file(kData + "mlp_tp.r0.py", dir / "fw.r0.py");
  auto lg = loadGraph(dir.string(), mesh);
  std::filesystem::remove_all(dir);
  ASSERT_TRUE(lg.ok()) << lg.error().str();
  EXPECT_EQ(opCounts(*lg)["all_reduce"], 0);
  // A capture that says its gather spans 2 ranks cannot be a one-rank graph.
  auto c = importFxGraph(kData + "collectives.r0.py");
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.error().id, "fx-group");
}

// ------------------------------------------------------------------ simplifications

const char* kSimplify = R"(
def forward(self, x: "f32[3, 5]", y: "f32[4, 5]", t: "i64[3]"):
    arange: "i64[3]" = torch.ops.aten.arange.start(0, 3, device = device(type='cpu'), pin_memory = False)
    index: "f32[3]" = torch.ops.aten.index.Tensor(x, [arange, t])
    arange_1: "i64[3]" = torch.ops.aten.arange.start(1, 4)
    index_1: "f32[3]" = torch.ops.aten.index.Tensor(y, [arange_1, t])
    slice_1: "f32[3, 5]" = torch.ops.aten.slice.Tensor(x, 1, 0, 9223372036854775807)
    mul_1: "f32[3, 5]" = torch.ops.aten.mul.Tensor(slice_1, 3)
    slice_scatter: "f32[3, 5]" = torch.ops.aten.slice_scatter.default(x, mul_1, 1, 0, 9223372036854775807)
    copy: "f32[3, 5]" = torch.ops.aten.copy.default(x, slice_scatter)
    _to_copy: "f32[3, 5]" = torch.ops.aten._to_copy.default(copy, dtype = torch.float32)
    mul: "f32[3, 5]" = torch.ops.aten.mul.Tensor(_to_copy, 2)
    return (index, index_1, mul, copy, copy)
)";

TEST(FxSimplify, RowPickFullSlicesAndNoOpCopiesAreExact) {
  auto g = importFxText(kSimplify, "s.py");
  ASSERT_TRUE(g.ok()) << g.error().str();
  auto c = opCounts(*g);
  EXPECT_EQ(c["gather_elements"], 1);  // index(x, [arange(0, 3), t])
  EXPECT_EQ(c["gather"], 1);           // arange(1, 4) does not cover dim 0: linearized gather
  EXPECT_EQ(c["slice"], 0);
  EXPECT_EQ(c["concat"], 0);
  EXPECT_EQ(c["identity"], 1);  // the output `copy` (an alias of x) keeps its name
  EXPECT_EQ(c["mul"], 3);  // the two muls and the linearized index (row * 5)
  std::vector<double> x(15), y(20);
  for (size_t i = 0; i < x.size(); ++i) x[i] = double(i) * 1.5 - 4;
  for (size_t i = 0; i < y.size(); ++i) y[i] = 100 + double(i);
  auto out = ir::runGraph(*g, {{"x", typed(DType::F32, {3, 5}, x)}, {"y", typed(DType::F32, {4, 5}, y)},
                               {"t", typed(DType::I64, {3}, {4, 0, 2})}});
  ASSERT_TRUE(out.ok()) << out.error().str();
  EXPECT_EQ(values(out->at("index")), (std::vector<double>{x[4], x[5], x[12]}));
  EXPECT_EQ(values(out->at("index_1")), (std::vector<double>{y[9], y[10], y[17]}));
  std::vector<double> want;
  for (double v : x) want.push_back(v * 3 * 2);
  EXPECT_EQ(values(out->at("mul")), want);
  ASSERT_EQ(g->outputs().size(), 5u);
  EXPECT_EQ(g->value(g->outputs()[3]).name, "copy");
  EXPECT_EQ(g->value(g->outputs()[4]).name, "copy");
  std::vector<double> scaled;
  for (double v : x) scaled.push_back(v * 3);
  EXPECT_EQ(values(out->at("copy")), scaled);
}

}  // namespace
}  // namespace sp::frontend

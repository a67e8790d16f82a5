// Decomposition files: every shipped decomposition against an independent
// reference (an ATen capture or C++ loops), user files loaded at run time,
// and file:line errors.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "frontend/fx_decomp.h"
#include "frontend/fx_decomp_expr.h"
#include "frontend/fx_import.h"
#include "frontend/fx_test_util.h"
#include "ir/interpreter.h"

namespace sp::frontend {
namespace {

using ir::DType;
using fx_test::kData;
using fx_test::typed;
using fx_test::values;
using fx_test::noise;
using fx_test::expectNear;


std::vector<double> outputAt(const ir::Graph& g, const ir::TensorMap& out, size_t k) {
  return values(out.at(g.value(g.outputs()[k]).name));
}

TEST(FxDecomp, ApexForwardAndBackwardMatchAtenReference) {
  auto g = importFxGraph(kData + "apex.py");
  ASSERT_TRUE(g.ok()) << g.error().str();
  auto ref = importFxGraph(kData + "apex_ref.py");
  ASSERT_TRUE(ref.ok()) << ref.error().str();
  ir::TensorMap in{{"x", typed(DType::F32, {2, 3, 6}, noise(36, 1))},
                   {"w", typed(DType::F32, {6}, noise(6, 2))},
                   {"b", typed(DType::F32, {6}, noise(6, 3))},
                   {"dy", typed(DType::F32, {2, 3, 6}, noise(36, 4))}};
  auto a = ir::runGraph(*g, in);
  ASSERT_TRUE(a.ok()) << a.error().str();
  auto r = ir::runGraph(*ref, in);
  ASSERT_TRUE(r.ok()) << r.error().str();
  ASSERT_EQ(g->outputs().size(), 9u);
  const char* what[] = {"y", "mean", "invvar", "dx", "dw", "db", "y (no affine)", "rms y", "rms invvar"};
  for (size_t k = 0; k < 9; ++k) expectNear(outputAt(*g, *a, k), outputAt(*ref, *r, k), 2e-5, what[k]);
}

TEST(FxDecomp, TransformerEngineOpsMatchAtenReference) {
  auto g = importFxGraph(kData + "te.py");
  ASSERT_TRUE(g.ok()) << g.error().str();
  auto ref = importFxGraph(kData + "te_ref.py");
  ASSERT_TRUE(ref.ok()) << ref.error().str();
  ir::TensorMap in{{"x", typed(DType::F32, {3, 8}, noise(24, 11))},
                   {"w", typed(DType::F32, {8}, noise(8, 12))},
                   {"b", typed(DType::F32, {8}, noise(8, 13))}};
  auto a = ir::runGraph(*g, in);
  ASSERT_TRUE(a.ok()) << a.error().str();
  auto r = ir::runGraph(*ref, in);
  ASSERT_TRUE(r.ok()) << r.error().str();
  const char* what[] = {"layernorm y", "mu", "rsigma", "rmsnorm y", "rms rsigma", "gelu", "swiglu"};
  ASSERT_EQ(g->outputs().size(), 7u);
  for (size_t k = 0; k < 7; ++k) expectNear(outputAt(*g, *a, k), outputAt(*ref, *r, k), 2e-5, what[k]);
  // Reading the None slot of rmsnorm_fwd is an error, not a guess.
  std::string none =
      "def forward(self, x: \"f32[3, 8]\", w: \"f32[8]\"):\n"
      "    r = torch.ops.tex.rmsnorm_fwd.default(x, w, 1e-05, None, None, None, 0, False)\n"
      "    m: \"f32[3]\" = r[1]\n"
      "    return (m,)\n";
  auto bad = importFxText(none, "none.py");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("output 1 is None"), std::string::npos) << bad.error().str();
}

// vLLM kernels against loops written from the kernels' definitions.
TEST(FxDecomp, VllmKernelsMatchLoopReference) {
  auto g = importFxGraph(kData + "vllm.py");
  ASSERT_TRUE(g.ok()) << g.error().str();
  auto x = noise(32, 1), w = noise(8, 2), r = noise(32, 3), gi = noise(32, 4), q = noise(32, 5),
       k = noise(16, 6), v = noise(16, 7), cache = noise(32, 8);
  std::vector<double> pos{3, 0, 15, 7};
  auto out = ir::runGraph(*g, {{"x", typed(DType::F32, {4, 8}, x)}, {"w", typed(DType::F32, {8}, w)},
                               {"r", typed(DType::F32, {4, 8}, r)}, {"g", typed(DType::F32, {4, 8}, gi)},
                               {"pos", typed(DType::I64, {4}, pos)}, {"cache", typed(DType::F32, {16, 2}, cache)},
                               {"q", typed(DType::F32, {4, 8}, q)}, {"k", typed(DType::F32, {4, 4}, k)},
                               {"v", typed(DType::F32, {4, 4}, v)}});
  ASSERT_TRUE(out.ok()) << out.error().str();
  auto rms = [&](const std::vector<double>& in) {
    std::vector<double> o(32);
    for (int t = 0; t < 4; ++t) {
      double ss = 0;
      for (int j = 0; j < 8; ++j) ss += in[size_t(t * 8 + j)] * in[size_t(t * 8 + j)];
      double s = 1 / std::sqrt(ss / 8 + 1e-6);
      for (int j = 0; j < 8; ++j) o[size_t(t * 8 + j)] = in[size_t(t * 8 + j)] * s * w[size_t(j)];
    }
    return o;
  };
  std::vector<double> res(32), sm(16);
  for (size_t i = 0; i < 32; ++i) res[i] = x[i] + r[i];
  for (int t = 0; t < 4; ++t)
    for (int j = 0; j < 4; ++j) {
      double a = gi[size_t(t * 8 + j)], b = gi[size_t(t * 8 + 4 + j)];
      sm[size_t(t * 4 + j)] = a / (1 + std::exp(-a)) * b;
    }
  // neox rotary over the first 2 of 4 head dims: cos, sin = cache[pos] halves.
  auto rope = [&](std::vector<double> t, int heads) {
    for (int n = 0; n < 4; ++n)
      for (int h = 0; h < heads; ++h) {
        size_t o = size_t(n * heads * 4 + h * 4);
        double c = cache[size_t(pos[size_t(n)] * 2)], s = cache[size_t(pos[size_t(n)] * 2 + 1)];
        double x1 = t[o], x2 = t[o + 1];
        t[o] = x1 * c - x2 * s;
        t[o + 1] = x2 * c + x1 * s;
      }
    return t;
  };
  auto qr = rope(q, 2), kr = rope(k, 1);
  // Causal attention, 2 query heads sharing 1 KV head, scale 1/sqrt(4).
  std::vector<double> att(32);
  for (int h = 0; h < 2; ++h)
    for (int t = 0; t < 4; ++t) {
      std::vector<double> p;
      double mx = -INFINITY, z = 0;
      for (int s = 0; s <= t; ++s) {
        double d = 0;
        for (int j = 0; j < 4; ++j) d += qr[size_t(t * 8 + h * 4 + j)] * kr[size_t(s * 4 + j)];
        p.push_back(d / 2);
        mx = std::max(mx, d / 2);
      }
      for (auto& e : p) z += (e = std::exp(e - mx));
      for (int j = 0; j < 4; ++j) {
        double acc = 0;
        for (int s = 0; s <= t; ++s) acc += p[size_t(s)] / z * v[size_t(s * 4 + j)];
        att[size_t(t * 8 + h * 4 + j)] = acc;
      }
    }
  const char* what[] = {"rms_norm", "fused_add_rms_norm out", "fused_add_rms_norm residual", "silu_and_mul",
                        "rotary query", "rotary key", "unified_attention_with_output", "unified_attention"};
  std::vector<std::vector<double>> want{rms(x), rms(res), res, sm, qr, kr, att, att};
  ASSERT_EQ(g->outputs().size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) expectNear(outputAt(*g, *out, i), want[i], 1e-5, what[i]);
}

TEST(FxDecomp, VllmAllReduceSumsOverTheMappedGroup) {
  FxOptions opts;
  opts.groups["tp:0"] = "tp";
  opts.mesh.axes = {{"tp", 2}};
  auto p = importFxProgram({kData + "vllm_ar.r0.py", kData + "vllm_ar.r1.py"}, opts);
  ASSERT_TRUE(p.ok()) << p.error().str();
  auto out = ir::runProgram(*p, {{{"x", typed(DType::F32, {2, 3}, {1, 2, 3, 4, 5, 6})}},
                                 {{"x", typed(DType::F32, {2, 3}, {10, 20, 30, 40, 50, 60})}}});
  ASSERT_TRUE(out.ok()) << out.error().str();
  for (int r = 0; r < 2; ++r)
    expectNear(values((*out)[size_t(r)].at("all_reduce")), {11, 22, 33, 44, 55, 66}, 0, "rank " + std::to_string(r));
  // One rank alone: the decomposition's all_reduce is the identity.
  auto g = importFxGraph(kData + "vllm_ar.r0.py", opts);
  ASSERT_TRUE(g.ok()) << g.error().str();
  for (const auto& n : g->nodes()) EXPECT_NE(n.op, ir::OpKind::AllReduce);
  auto one = ir::runGraph(*g, {{"x", typed(DType::F32, {2, 3}, {1, 2, 3, 4, 5, 6})}});
  ASSERT_TRUE(one.ok()) << one.error().str();
  expectNear(values(one->at("all_reduce")), {1, 2, 3, 4, 5, 6}, 0, "one rank");
}

// ------------------------------------------------------------------ user files and errors

struct TempDir {
  std::filesystem::path path;
  explicit TempDir(const std::string& name) : path(std::filesystem::temp_directory_path() / name) {
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  std::string write(const std::string& file, const std::string& text) const {
    std::ofstream(path / file) << text;
    return (path / file).string();
  }
};

const char* kScaledCall =
    "def forward(self, x: \"f32[2, 3]\"):\n"
    "    y: \"f32[2, 3]\" = torch.ops.mylib.scaled_tanh.default(x, 2.5)\n"
    "    return (y,)\n";

TEST(FxDecomp, UserFileAddsAKernelWithoutRecompiling) {
  auto none = importFxText(kScaledCall, "user.py");
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().id, "fx-unsupported-op");
  EXPECT_NE(none.error().message.find("mylib.scaled_tanh.default"), std::string::npos);
  TempDir dir("sp_decomp_user");
  dir.write("mylib.decomp",
            "# y = tanh(x) * scale\n"
            "decomp mylib.scaled_tanh.default\n"
            "args %x, scale\n"
            "outputs %y\n"
            "{\n"
            "  %t = tanh(%x)\n"
            "  %s = constant() {value = dense<${dtype(x)}[], [${scale}]>}\n"
            "  %y = mul(%t, %s)\n"
            "}\n");
  FxOptions opts;
  opts.decompDirs.push_back(dir.path.string());
  auto g = importFxText(kScaledCall, "user.py", opts);
  ASSERT_TRUE(g.ok()) << g.error().str();
  auto out = ir::runGraph(*g, {{"x", typed(DType::F32, {2, 3}, {-1, 0, 0.5, 1, 2, 3})}});
  ASSERT_TRUE(out.ok()) << out.error().str();
  std::vector<double> want;
  for (double v : {-1.0, 0.0, 0.5, 1.0, 2.0, 3.0}) want.push_back(std::tanh(v) * 2.5);
  expectNear(values(out->at("y")), want, 1e-6, "scaled_tanh");
}

TEST(FxDecomp, BadFilesGiveFileAndLine) {
  struct Case {
    const char* text;
    const char* where;
    const char* what;
  } cases[] = {
      {"decomp a.b.default\nargs %x\noutputs y\n{\n}\n", "bad.decomp:3", "must be a %value"},
      {"decomp a.b.default\nargs %x\nfrobnicate 1\n", "bad.decomp:3", "unknown header line"},
      {"args %x\n", "bad.decomp:1", "expected 'decomp"},
      {"decomp a.b.default\nargs %x\noutputs %y\n{\n  %y = neg(%x)\n", "bad.decomp:1", "no closing"},
      {"decomp a.b.default\nargs %x\nmutates z -> %y\n{\n  %y = neg(%x)\n}\n", "bad.decomp:1", "not a tensor argument"},
  };
  for (const auto& c : cases) {
    auto r = fx::parseDecompFile(c.text, "bad.decomp");
    ASSERT_FALSE(r.ok()) << c.text;
    EXPECT_EQ(r.error().location, c.where) << r.error().str();
    EXPECT_NE(r.error().message.find(c.what), std::string::npos) << r.error().str();
  }
  // Body errors show at the call, located in the decomposition file.
  TempDir dir("sp_decomp_bad");
  std::string file = dir.write("bad.decomp",
                               "decomp mylib.scaled_tanh.default\n"
                               "args %x, scale\n"
                               "outputs %y\n"
                               "{\n"
                               "  %t = tanh(%x)\n"
                               "  %y = mul(%t, %nope)\n"
                               "}\n");
  FxOptions opts;
  opts.decompDirs.push_back(dir.path.string());
  auto g = importFxText(kScaledCall, "user.py", opts);
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.error().location.rfind(file + ":6", 0), 0u) << g.error().str();
  EXPECT_NE(g.error().message.find("user.py:2"), std::string::npos) << g.error().str();
  // A substitution error names the file line too.
  dir.write("bad.decomp",
            "decomp mylib.scaled_tanh.default\nargs %x, scale\noutputs %y\n{\n"
            "  %y = reshape(%x) {shape = [${numel(x) / 4}]}\n}\n");
  g = importFxText(kScaledCall, "user.py", opts);
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.error().location, file + ":5") << g.error().str();
  EXPECT_NE(g.error().message.find("not divisible"), std::string::npos) << g.error().str();
}

TEST(FxDecomp, UndeclaredArgumentsAndFailedRequirementsAreRejected) {
  std::string call =
      "def forward(self, x: \"f32[4, 8]\", w: \"f32[8]\"):\n"
      "    e: \"f32[4, 8]\" = torch.ops.aten.empty.memory_format([4, 8], dtype = torch.float32)\n"
      "    a = torch.ops.higher_order.auto_functionalized(torch.ops._C.rms_norm.default, result = e, input = x, "
      "weight = w, epsilon = 1e-06, fancy = True)\n"
      "    y: \"f32[4, 8]\" = a[1]\n"
      "    return (y,)\n";
  auto g = importFxText(call, "kw.py");
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.error().message.find("keyword argument 'fancy' is not declared"), std::string::npos) << g.error().str();
  std::string gptj =
      "def forward(self, p: \"i64[4]\", q: \"f32[4, 8]\", k: \"f32[4, 8]\", c: \"f32[16, 4]\"):\n"
      "    a = torch.ops.higher_order.auto_functionalized(torch.ops._C.rotary_embedding.default, positions = p, "
      "query = q, key = k, head_size = 4, cos_sin_cache = c, is_neox = False)\n"
      "    y: \"f32[4, 8]\" = a[1]\n"
      "    return (y,)\n";
  g = importFxText(gptj, "rope.py");
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.error().id, "fx-decomp-require");
  EXPECT_NE(g.error().message.find("neox"), std::string::npos) << g.error().str();
}

// Integer arithmetic in ${...} never overflows silently, never traps
// (INT64_MIN / -1 is SIGFPE in hardware) and never throws out of the
// parser; deep nesting is an error, not a stack overflow.
TEST(FxDecomp, ExpressionOverflowAndNestingAreErrors) {
  fx::DecompEnv env;
  auto expectError = [&](const std::string& text, const std::string& msg) {
    auto v = fx::evalDecompExpr(text, env);
    ASSERT_FALSE(v.ok()) << text;
    EXPECT_EQ(v.error().id, "fx-decomp-expr");
    EXPECT_NE(v.error().message.find(msg), std::string::npos) << v.error().str();
  };
  expectError("9223372036854775807 + 1", "integer overflow in 9223372036854775807 + 1");
  expectError("-9223372036854775807 - 2", "integer overflow in -9223372036854775807 - 2");
  expectError("4294967296 * 4294967296", "integer overflow in 4294967296 * 4294967296");
  expectError("(-9223372036854775807 - 1) / -1", "integer overflow in -9223372036854775808 / -1");
  expectError("99999999999999999999", "integer 99999999999999999999 is out of range (64 bits)");
  expectError("prod([4294967296, 4294967296])", "integer overflow");
  expectError(std::string(1000, '(') + "1" + std::string(1000, ')'), "nested deeper than 200 levels");
  expectError(std::string(100000, '-') + "1", "nested deeper than 200 levels");
  auto mod = fx::evalDecompExpr("(-9223372036854775807 - 1) % -1", env);
  ASSERT_TRUE(mod.ok()) << mod.error().str();
  EXPECT_EQ(std::get<int64_t>(*mod), 0);
  auto deep = fx::evalDecompExpr(std::string(100, '(') + "6 / -2" + std::string(100, ')'), env);
  ASSERT_TRUE(deep.ok()) << deep.error().str();
  EXPECT_EQ(std::get<int64_t>(*deep), -3);
  auto len = fx::evalDecompExpr("len([4294967296, 4294967296, 4294967296])", env);
  ASSERT_TRUE(len.ok()) << len.error().str();
  EXPECT_EQ(std::get<int64_t>(*len), 3);
}

TEST(FxDecomp, ShippedLibraryDeclaresTheFrameworkKernels) {
  auto lib = fx::DecompLibrary::load({fx::defaultDecompDir()});
  ASSERT_TRUE(lib.ok()) << lib.error().str();
  for (const char* op : {"apex.fused_layer_norm_affine_fwd.default", "apex.fused_layer_norm_affine_bwd.default",
                         "apex.fused_layer_norm_fwd.default", "apex.fused_rms_norm_affine_fwd.default",
                         "_C.rms_norm.default", "_C.fused_add_rms_norm.default", "_C.silu_and_mul.default",
                         "_C.rotary_embedding.default", "vllm.unified_attention.default",
                         "vllm.unified_attention_with_output.default", "vllm.all_reduce.default",
                         "tex.layernorm_fwd.default", "tex.rmsnorm_fwd.default", "tex.gelu.default",
                         "tex.swiglu.default"})
    EXPECT_NE(lib->find(op), nullptr) << op;
}

}  // namespace
}  // namespace sp::frontend

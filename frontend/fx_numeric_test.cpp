// Numeric and structural tests of the torch.fx importer on the hand-written
// captures in tests/data/fx, and the Megatron corpus when present.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "frontend/fx_import.h"
#include "frontend/fx_test_util.h"
#include "ir/interpreter.h"

namespace sp::frontend {
namespace {

using ir::DType;
using ir::Tensor;
using fx_test::kData;
using fx_test::typed;
using fx_test::values;
using fx_test::noise;
using fx_test::expectNear;

const std::string kCorpus = SP_SOURCE_DIR "/../shared/corpus/megatron_gpt_tp2_l1";

std::map<std::string, int> opCounts(const ir::Graph& g) {
  std::map<std::string, int> c;
  for (const auto& n : g.nodes()) ++c[std::string(ir::opName(n.op))];
  return c;
}

std::string countsStr(const ir::Graph& g) {
  std::string s;
  for (const auto& [k, v] : opCounts(g)) s += k + "=" + std::to_string(v) + " ";
  return s;
}

std::vector<double> iota(size_t n, double start = 0, double step = 1) {
  std::vector<double> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = start + step * double(i);
  return v;
}


ir::Graph mustImport(const std::string& file, const FxOptions& opts = {}) {
  auto g = importFxGraph(kData + file, opts);
  EXPECT_TRUE(g.ok()) << g.error().str();
  return g.ok() ? std::move(*g) : ir::Graph();
}

// ------------------------------------------------------------------ tensor parallel MLP

TEST(FxProgram, TensorParallelMlpMatchesSequential) {
  ir::Graph seq = mustImport("mlp_seq.py");
  FxOptions opts;
  opts.groups["3"] = "tp";
  opts.mesh.axes = {{"tp", 2}};
  auto prog = importFxProgram({kData + "mlp_tp.r0.py", kData + "mlp_tp.r1.py"}, opts);
  ASSERT_TRUE(prog.ok()) << prog.error().str();
  const ir::Graph& r0 = prog->rank(0);
  auto c = opCounts(r0);
  EXPECT_EQ(c["all_reduce"], 1);
  EXPECT_EQ(c["matmul"], 2);
  const ir::Node& ar = r0.node(r0.value(*r0.findValue("all_reduce")).producer);
  EXPECT_EQ(attrStr(ar.attrs, "group"), "tp");
  EXPECT_EQ(attrStr(ar.attrs, "reduce"), "sum");
  EXPECT_EQ(ar.loc.file, "/src/tp.py");

  auto w1 = noise(32, 1), b1 = noise(8, 2), w2 = noise(32, 3), x = noise(24, 4);
  ir::TensorMap sIn{{"primals_1", typed(DType::F32, {8, 4}, w1)},
                    {"primals_2", typed(DType::F32, {8}, b1)},
                    {"primals_3", typed(DType::F32, {4, 8}, w2)},
                    {"primals_4", typed(DType::F32, {2, 3, 4}, x)}};
  auto sOut = ir::runGraph(seq, sIn);
  ASSERT_TRUE(sOut.ok()) << sOut.error().str();
  std::vector<ir::TensorMap> dIn(2);
  for (int r = 0; r < 2; ++r) {
    std::vector<double> w1r(w1.begin() + 16 * r, w1.begin() + 16 * (r + 1));
    std::vector<double> b1r(b1.begin() + 4 * r, b1.begin() + 4 * (r + 1));
    std::vector<double> w2r;
    for (int i = 0; i < 4; ++i)
      for (int j = 0; j < 4; ++j) w2r.push_back(w2[size_t(i * 8 + 4 * r + j)]);
    dIn[size_t(r)] = {{"primals_1", typed(DType::F32, {4, 4}, w1r)},
                      {"primals_2", typed(DType::F32, {4}, b1r)},
                      {"primals_3", typed(DType::F32, {4, 4}, w2r)},
                      {"primals_4", typed(DType::F32, {2, 3, 4}, x)}};
  }
  auto dOut = ir::runProgram(*prog, dIn);
  ASSERT_TRUE(dOut.ok()) << dOut.error().str();
  for (int r = 0; r < 2; ++r)
    expectNear(values((*dOut)[size_t(r)].at("wait_tensor")), values(sOut->at("view_3")), 1e-5,
               "rank " + std::to_string(r));
}

TEST(FxProgram, CollectivesOnTwoRanks) {
  auto prog = importFxProgram({kData + "collectives.r0.py", kData + "collectives.r1.py"});
  ASSERT_TRUE(prog.ok()) << prog.error().str();
  auto c = opCounts(prog->rank(1));
  EXPECT_EQ(c["all_gather"], 1);
  EXPECT_EQ(c["reduce_scatter"], 1);
  EXPECT_EQ(c["all_to_all"], 1);
  EXPECT_EQ(c["broadcast"], 1);
  EXPECT_EQ(c["all_reduce"], 1);
  EXPECT_EQ(c["identity"], 5);  // wait_tensor
  std::vector<double> a{1, 2, 3, 4, 5, 6}, b{10, 20, 30, 40, 50, 60};
  auto out = ir::runProgram(*prog, {{{"primals_1", typed(DType::F32, {2, 3}, a)}},
                                    {{"primals_1", typed(DType::F32, {2, 3}, b)}}});
  ASSERT_TRUE(out.ok()) << out.error().str();
  const auto& o0 = (*out)[0];
  const auto& o1 = (*out)[1];
  expectNear(values(o0.at("wait_tensor")), {1, 2, 3, 4, 5, 6, 10, 20, 30, 40, 50, 60}, 0, "all_gather");
  expectNear(values(o0.at("wait_tensor_1")), {11, 22, 33}, 0, "reduce_scatter r0");
  expectNear(values(o1.at("wait_tensor_1")), {44, 55, 66}, 0, "reduce_scatter r1");
  expectNear(values(o0.at("wait_tensor_2")), {1, 2, 3, 10, 20, 30}, 0, "all_to_all r0");
  expectNear(values(o1.at("wait_tensor_2")), {4, 5, 6, 40, 50, 60}, 0, "all_to_all r1");
  expectNear(values(o0.at("wait_tensor_3")), b, 0, "broadcast from rank 1");
  expectNear(values(o1.at("wait_tensor_4")), {5.5, 11, 16.5, 22, 27.5, 33}, 1e-6, "all_reduce avg");
}

// ------------------------------------------------------------------ layout and math

TEST(FxOps, LayoutAndIndexing) {
  FxOptions opts;
  opts.tensorConstants["_tensor_constant0"] = Tensor::scalar(DType::F32, -1);
  ir::Graph g = mustImport("layout.py", opts);
  ASSERT_EQ(g.params().size(), 1u);
  auto x = iota(24);  // x[i][j] = 6 i + j
  auto out = ir::runGraph(g, {{"primals_1", typed(DType::F32, {4, 6}, x)},
                              {"primals_2", typed(DType::I64, {3}, {2, 0, 3})},
                              {"primals_3", typed(DType::Bool, {4}, {0, 1, 0, 1})},
                              {"primals_4", typed(DType::F32, {2, 6}, iota(12, 100))}});
  ASSERT_TRUE(out.ok()) << out.error().str();
  auto& o = *out;
  expectNear(values(o.at("slice_1")), {2, 3, 4, 5, 8, 9, 10, 11, 14, 15, 16, 17, 20, 21, 22, 23}, 0, "slice sentinel");
  expectNear(values(o.at("slice_2")), {0, 1, 2, 3, 4, 5, 12, 13, 14, 15, 16, 17}, 0, "slice step");
  expectNear(values(o.at("select")), iota(6, 18), 0, "select -1");
  std::vector<double> ss = x;
  for (int i = 0; i < 12; ++i) ss[size_t(6 + i)] = 100 + i;
  expectNear(values(o.at("slice_scatter")), ss, 0, "slice_scatter");
  std::vector<double> ss2 = x;
  for (int j = 0; j < 6; ++j) ss2[size_t(j)] = 100 + j, ss2[size_t(12 + j)] = 106 + j;
  expectNear(values(o.at("slice_scatter_1")), ss2, 0, "slice_scatter step 2");
  std::vector<double> idx;
  for (int r : {2, 0, 3})
    for (int j = 0; j < 6; ++j) idx.push_back(6 * r + j);
  expectNear(values(o.at("index")), idx, 0, "index");
  expectNear(values(o.at("embedding")), idx, 0, "embedding");
  expectNear(values(o.at("index_1")), {14, 0, 21}, 0, "index 2 tensors");
  expectNear(values(o.at("index_2")), {2, 0, 3, 8, 6, 9, 14, 12, 15, 20, 18, 21}, 0, "index dim 1");
  std::vector<double> ip = x;
  for (int j = 0; j < 6; ++j) ip[size_t(6 + j)] = -1, ip[size_t(18 + j)] = -1;
  expectNear(values(o.at("index_put")), ip, 0, "index_put mask");
  std::vector<double> acc = x;
  for (int r : {2, 0, 3})
    for (int j = 0; j < 6; ++j) acc[size_t(6 * r + j)] += 18 + j;
  expectNear(values(o.at("index_put_1")), acc, 0, "index_put accumulate");
  auto cat = x;
  for (int i = 0; i < 12; ++i) cat.push_back(100 + i);
  expectNear(values(o.at("cat")), cat, 0, "cat");
  expectNear(values(o.at("getitem_1")), {4, 5, 10, 11, 16, 17, 22, 23}, 0, "split");
  EXPECT_EQ(values(o.at("permute"))[1], 6);
  EXPECT_EQ(o.at("expand").dims(), (std::vector<int64_t>{4, 3, 6}));
  expectNear(values(o.at("squeeze")), x, 0, "squeeze");
  expectNear(values(o.at("arange")), {1, 3, 5, 7, 9}, 0, "arange");
  EXPECT_TRUE(std::isinf(values(o.at("full"))[3]));
}

TEST(FxOps, ElementwisePromotionAndReductions) {
  ir::Graph g = mustImport("math.py");
  // mul.Tensor(f32, i64) casts the integer operand; sum of bool gives i64.
  const ir::Node& mul = g.node(g.value(*g.findValue("mul")).producer);
  EXPECT_EQ(g.value(mul.inputs[1]).type.dtype, DType::F32);
  std::vector<double> a{-2, -0.5, 0, 0.5, 1, 3}, b{0, 1, 2, 3, 4, 9};
  auto out = ir::runGraph(g, {{"primals_1", typed(DType::F32, {2, 3}, a)},
                              {"primals_2", typed(DType::I64, {2, 3}, b)},
                              {"primals_3", typed(DType::Bool, {2, 3}, {1, 0, 1, 0, 0, 1})}});
  ASSERT_TRUE(out.ok()) << out.error().str();
  auto& o = *out;
  auto each = [&](auto f) {
    std::vector<double> r;
    for (size_t i = 0; i < 6; ++i) r.push_back(f(a[i], b[i], i));
    return r;
  };
  expectNear(values(o.at("add")), each([](double x, double y, size_t) { return x + 2 * y; }), 1e-6, "add alpha");
  expectNear(values(o.at("add_1")), each([](double x, double, size_t) { return x + 1.5; }), 1e-6, "add scalar");
  expectNear(values(o.at("sub")), each([](double, double y, size_t) { return y - 1; }), 0, "sub int");
  expectNear(values(o.at("rsub")), each([](double x, double, size_t) { return 1 - x; }), 1e-6, "rsub");
  expectNear(values(o.at("mul")), each([](double x, double y, size_t) { return x * y; }), 1e-6, "mul");
  expectNear(values(o.at("div")), each([](double, double y, size_t) { return y / 4; }), 1e-6, "true div");
  expectNear(values(o.at("div_1")), each([](double, double y, size_t) { return std::floor(y / 4); }), 0, "floor div");
  expectNear(values(o.at("pow_1")), each([](double x, double, size_t) { return x * x; }), 1e-6, "pow");
  expectNear(values(o.at("sigmoid")), each([](double x, double, size_t) { return 1 / (1 + std::exp(-x)); }), 1e-6, "sigmoid");
  expectNear(values(o.at("lt")), {1, 1, 1, 0, 0, 0}, 0, "lt scalar float vs int");
  expectNear(values(o.at("eq")), {0, 0, 0, 0, 0, 0}, 0, "eq");
  expectNear(values(o.at("bitwise_or")), {1, 1, 1, 0, 0, 1}, 0, "or");
  expectNear(values(o.at("bitwise_not")), {0, 0, 0, 1, 1, 0}, 0, "not");
  expectNear(values(o.at("where")), {-2, 0, 0, 0, 0, 3}, 0, "where scalar");
  expectNear(values(o.at("sum_1")), {-2.5, 4.5}, 1e-6, "sum keepdim");
  EXPECT_EQ(o.at("sum_1").dims(), (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(o.at("sum_2").dtype(), DType::I64);
  EXPECT_EQ(values(o.at("sum_2"))[0], 3);
  expectNear(values(o.at("mean")), {-0.75, 0.25, 1.5}, 1e-6, "mean dim 0");
  expectNear(values(o.at("amax")), {0, 3}, 0, "amax");
  expectNear(values(o.at("getitem")), {0, 3}, 0, "max.dim values");
  expectNear(values(o.at("getitem_1")), {2, 2}, 0, "max.dim indices");
  expectNear(values(o.at("_to_copy")), b, 0, "to f32");
  expectNear(values(o.at("clamp")), {-1, -0.5, 0, 0.5, 1, 1}, 0, "clamp");
  expectNear(values(o.at("ones_like")), std::vector<double>(6, 1), 0, "ones_like");
  auto sm = values(o.at("_softmax"));
  EXPECT_NEAR(sm[0] + sm[1] + sm[2], 1.0, 1e-6);
}

// ------------------------------------------------------------------ attention, dropout

TEST(FxOps, AttentionBlockStructureAndDropoutStream) {
  ir::Graph g = mustImport("attention.py");
  auto c = opCounts(g);
  EXPECT_EQ(c["dropout"], 1);
  EXPECT_EQ(c["layer_norm"], 1);
  EXPECT_EQ(c["matmul"], 4);
  EXPECT_EQ(c["expand"], 0) << "the empty buffer of baddbmm(beta=0) is dropped";
  // The random stream of native_dropout is an explicit f32 input shaped like x.
  auto rng = g.findValue("native_dropout_rng");
  ASSERT_TRUE(rng.has_value());
  EXPECT_EQ(g.value(*rng).kind, ir::ValueKind::Input);
  EXPECT_EQ(g.value(*rng).type.str(), "f32[2, 2, 4, 4]");
  const ir::Node& d = g.node(g.value(*g.findValue("getitem_3")).producer);
  EXPECT_EQ(d.op, ir::OpKind::Dropout);
  EXPECT_DOUBLE_EQ(attrFloat(d.attrs, "ratio"), 0.25);
  EXPECT_EQ(d.loc.line, 35);
  // Stream values >= p keep an element: mask = stream >= 0.25.
  auto out = ir::runGraph(g, {{"native_dropout_rng", typed(DType::F32, {2, 2, 4, 4}, std::vector<double>(64, 0.5))},
                              {"primals_6", typed(DType::F32, {8}, std::vector<double>(8, 1))},
                              {"primals_7", typed(DType::F32, {8}, std::vector<double>(8, 0))}});
  ASSERT_TRUE(out.ok()) << out.error().str();
  expectNear(values(out->at("getitem_4")), std::vector<double>(64, 1), 0, "mask");
  // Layer-norm statistics: mean 0 and rstd 1/sqrt(var + eps) of the output rows.
  // Layer-norm statistics: the normalized rows have mean ~0; mean/rstd keep dims.
  auto ln = values(out->at("getitem_5"));
  double row = 0;
  for (int i = 0; i < 8; ++i) row += ln[size_t(i)];
  EXPECT_NEAR(row, 0, 1e-4);
  EXPECT_EQ(out->at("getitem_7").dims(), (std::vector<int64_t>{4, 2, 1}));
  EXPECT_EQ(out->at("getitem_6").dims(), (std::vector<int64_t>{4, 2, 1}));
}

// ------------------------------------------------------------------ backward ops

TEST(FxOps, BackwardOpsMatchFiniteDifferences) {
  ir::Graph g = mustImport("grad.py");
  auto x = noise(12, 7), gy = noise(12, 8), w = noise(4, 9), b = noise(4, 10), ge = noise(24, 11);
  std::vector<double> ids{1, 4, 1, 0, 2, 4};
  ir::TensorMap in{{"primals_1", typed(DType::F32, {3, 4}, x)}, {"primals_2", typed(DType::F32, {3, 4}, gy)},
                   {"primals_3", typed(DType::F32, {4}, w)},    {"primals_4", typed(DType::F32, {4}, b)},
                   {"primals_5", typed(DType::I64, {2, 3}, ids)}, {"primals_6", typed(DType::F32, {2, 3, 4}, ge)}};
  auto out = ir::runGraph(g, in);
  ASSERT_TRUE(out.ok()) << out.error().str();
  auto& o = *out;
  // d/dx of sum(gy * f(x)) by central differences, f evaluated by the same graph.
  auto fd = [&](const std::string& fwd, const std::string& param) {
    return fx_test::finiteDifferences(g, in, param, fwd, gy);
  };
  // gelu: derivative of x * Phi(x) computed directly.
  std::vector<double> gel, sig, silu;
  for (size_t i = 0; i < 12; ++i) {
    double cdf = 0.5 * (1 + std::erf(x[i] / std::sqrt(2.0)));
    double pdf = std::exp(-0.5 * x[i] * x[i]) / std::sqrt(2 * M_PI);
    gel.push_back(gy[i] * (cdf + x[i] * pdf));
    double s = 1 / (1 + std::exp(-x[i]));
    sig.push_back(gy[i] * s * (1 - s));
    silu.push_back(gy[i] * (s + x[i] * s * (1 - s)));  // d/dx of x * sigmoid(x)
  }
  expectNear(values(o.at("gelu_backward")), gel, 1e-5, "gelu_backward");
  expectNear(values(o.at("sigmoid_backward")), sig, 1e-5, "sigmoid_backward");
  expectNear(values(o.at("silu_backward")), silu, 1e-5, "silu_backward");
  // slice_backward: the gradient in its window (columns 1..4; every other
  // column), zeros elsewhere.
  std::vector<double> pad(18, 0.0), strided(24, 0.0);
  for (size_t i = 0; i < 3; ++i)
    for (size_t j = 0; j < 4; ++j) {
      pad[i * 6 + j + 1] = gy[i * 4 + j];
      strided[i * 8 + 2 * j] = gy[i * 4 + j];
    }
  expectNear(values(o.at("slice_backward")), pad, 0, "slice_backward");
  expectNear(values(o.at("slice_backward_1")), strided, 0, "slice_backward step 2");
  std::vector<double> thr;
  for (size_t i = 0; i < 12; ++i) thr.push_back(x[i] <= 0 ? 0 : gy[i]);
  expectNear(values(o.at("threshold_backward")), thr, 0, "threshold_backward");
  expectNear(values(o.at("_softmax_backward_data")), fd("_softmax", "primals_1"), 2e-3, "softmax_backward");
  expectNear(values(o.at("getitem_3")), fd("getitem", "primals_1"), 2e-3, "layer_norm grad_input");
  expectNear(values(o.at("getitem_4")), fd("getitem", "primals_3"), 2e-3, "layer_norm grad_weight");
  expectNear(values(o.at("getitem_5")), fd("getitem", "primals_4"), 2e-3, "layer_norm grad_bias");
  // tanh-approximate gelu vs the exact one: close for small x.
  expectNear(values(o.at("gelu_backward_1")), gel, 2e-3, "gelu_backward tanh");
  // embedding_dense_backward: rows summed by index, padding row 1 left zero.
  std::vector<double> emb(20, 0);
  for (size_t p = 0; p < 6; ++p)
    if (ids[p] != 1)
      for (size_t j = 0; j < 4; ++j) emb[size_t(ids[p]) * 4 + j] += ge[p * 4 + j];
  expectNear(values(o.at("embedding_dense_backward")), emb, 1e-6, "embedding_dense_backward");
}

// ------------------------------------------------------------------ corpus

TEST(FxCorpus, MegatronSequential) {
  std::string path = kCorpus + "/seq/fw.g0.r0.py";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "corpus absent: " << path;
  std::vector<FxConstantNote> notes;
  FxOptions opts;
  opts.constantNotes = &notes;
  auto g = importFxGraph(path, opts);
  ASSERT_TRUE(g.ok()) << g.error().str();
  std::printf("seq: %zu nodes, %zu inputs, %zu params, %zu outputs: %s\n", g->nodes().size(),
              g->inputs().size(), g->params().size(), g->outputs().size(), countsStr(*g).c_str());
  auto c = opCounts(*g);
  EXPECT_EQ(c["dropout"], 4);
  EXPECT_EQ(c["layer_norm"], 3);
  // The vocab-parallel cross entropy all-reduces over a group of one: identity.
  EXPECT_EQ(c["all_reduce"], 0);
  // _tensor_constant0/1 (cross_entropy.py:245, i64 and f32) come from the known-sites table.
  EXPECT_EQ(g->params().size(), 0u);
  ASSERT_EQ(notes.size(), 2u);
  for (const auto& n : notes) {
    ASSERT_TRUE(n.value.has_value()) << n.str();
    EXPECT_EQ(*n.value, 0.0);
    EXPECT_NE(n.origin.find("known site megatron/core/tensor_parallel/cross_entropy.py:245"), std::string::npos)
        << n.origin;
  }
  EXPECT_EQ(g->inputs().size(), 22u + 4u);  // primals + one random stream per dropout
  EXPECT_EQ(g->outputs().size(), 47u);
}

TEST(FxCorpus, MegatronTensorParallel) {
  std::vector<std::string> files{kCorpus + "/dist/fw.g0.r0.py", kCorpus + "/dist/fw.g0.r1.py"};
  if (!std::filesystem::exists(files[0])) GTEST_SKIP() << "corpus absent: " << files[0];
  auto p = importFxProgram(files);
  ASSERT_TRUE(p.ok()) << p.error().str();
  for (int64_t r = 0; r < p->worldSize(); ++r) {
    const auto& g = p->rank(r);
    std::printf("%s: %zu nodes: %s\n", g.name().c_str(), g.nodes().size(), countsStr(g).c_str());
    auto c = opCounts(g);
    EXPECT_EQ(c["all_gather"], 3);
    EXPECT_EQ(c["reduce_scatter"], 2);
    EXPECT_EQ(c["all_reduce"], 4);
    EXPECT_EQ(c["dropout"], 4);
  }
  // Rank-dependent constants survive: the vocab range of rank 1 starts at 49152.
  const ir::Graph& r1 = p->rank(1);
  const ir::Node& lt = r1.node(r1.value(*r1.findValue("lt")).producer);
  const ir::Node& k = r1.node(r1.value(lt.inputs[1]).producer);
  EXPECT_EQ(attrTensor(k.attrs, "value").getAsDouble(0), 49152);
  const ir::Node& slice = r1.node(r1.value(*r1.findValue("slice_4")).producer);
  EXPECT_EQ(attrInts(slice.attrs, "starts"), (std::vector<int64_t>{768}));
  EXPECT_EQ(slice.loc.file, "/opt/tiger/Megatron-LM/megatron/core/tensor_parallel/mappings.py");
}

}  // namespace
}  // namespace sp::frontend

namespace sp::frontend {
namespace {

// Fused scaled-dot-product attention (tests/fixtures/capture/sdpa_*, made by
// tests/fixtures/make_sdpa_fixtures.py): the imported attention equals
// softmax(q kᵀ · scale (+ bias | causal mask)) v computed here from the
// imported q, k and v, for the CPU flash kernel (and its log-sum-exp
// output), the public op with is_causal, and the efficient kernel with a
// float bias and an explicit scale.
TEST(FxSdpa, FusedAttentionMatchesTheReference) {
  struct Case {
    const char* dir;
    bool causal, bias;
    double scale;
  };
  for (Case c : {Case{"sdpa_cpu_tp2", false, false, 0.5}, Case{"sdpa_causal_tp2", true, false, 0.5},
                 Case{"sdpa_scaled_tp2", false, true, 0.25}}) {
    SCOPED_TRACE(c.dir);
    auto g = importFxGraph(std::string(SP_SOURCE_DIR) + "/tests/fixtures/capture/" + c.dir + "/seq.py", {});
    ASSERT_TRUE(g.ok()) << g.error().str();
    ir::RunOptions opts;
    opts.seed = 7;
    auto all = ir::runGraphAll(*g, {}, opts);
    ASSERT_TRUE(all.ok()) << all.error().str();
    auto at = [&](const std::string& n) {
      auto id = g->findValue(n);
      EXPECT_TRUE(id.has_value()) << n;
      return id ? values((*all)[size_t(*id)]) : std::vector<double>{};
    };
    auto q = at("transpose"), k = at("transpose_1"), v = at("transpose_2"), o = at("_unsafe_view_4");
    std::vector<double> bias = c.bias ? at("bias") : std::vector<double>{};
    const int B = 2, H = 4, L = 3, D = 4;
    std::vector<double> want(o.size()), lse(size_t(B * H * L));
    for (int bh = 0; bh < B * H; ++bh)
      for (int i = 0; i < L; ++i) {
        std::vector<double> s(L);
        double m = -INFINITY;
        for (int j = 0; j < L; ++j) {
          double dot = 0;
          for (int d = 0; d < D; ++d) dot += q[size_t((bh * L + i) * D + d)] * k[size_t((bh * L + j) * D + d)];
          s[size_t(j)] = dot * c.scale + (c.bias ? bias[size_t(i * L + j)] : 0.0);
          if (c.causal && j > i) s[size_t(j)] = -INFINITY;
          m = std::max(m, s[size_t(j)]);
        }
        double z = 0;
        for (double& x : s) z += (x = std::exp(x - m));
        lse[size_t(bh * L + i)] = std::log(z) + m;
        for (int d = 0; d < D; ++d) {
          double acc = 0;
          for (int j = 0; j < L; ++j) acc += s[size_t(j)] / z * v[size_t((bh * L + j) * D + d)];
          want[size_t((bh * L + i) * D + d)] = acc;
        }
      }
    expectNear(o, want, 1e-5, c.dir);
    if (std::string(c.dir) == "sdpa_cpu_tp2") expectNear(at("_lse"), lse, 1e-5, "logsumexp");
  }
}

// Attention dropout draws a mask the capture does not show: refused, naming it.
TEST(FxSdpa, DropoutIsRefused) {
  std::string dir = std::string(SP_SOURCE_DIR) + "/tests/fixtures/capture/sdpa_causal_tp2/seq.py";
  std::ifstream in(dir);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string text = ss.str();
  size_t at = text.find("None, 0.0, True)");
  ASSERT_NE(at, std::string::npos);
  text.replace(at, 16, "None, 0.1, True)");
  auto g = importFxText(text, "sdpa_dropout.py", {});
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.error().message.find("attention dropout (dropout_p = 0.1"), std::string::npos) << g.error().str();
}

}  // namespace
}  // namespace sp::frontend

namespace sp::frontend {
namespace {

// The fused attention's backward kernels give the gradients of
// Σ out · g by finite differences: causal with fewer queries than keys and
// an explicit scale (the CPU flash kernel), and with a float bias (the
// efficient kernel).
TEST(FxSdpa, BackwardKernelsMatchFiniteDifferences) {
  const std::string head =
      "import torch\n\nclass GraphModule(torch.nn.Module):\n"
      "    def forward(self, q: \"f32[2, 3, 4, 5]\", k: \"f32[2, 3, 6, 5]\", v: \"f32[2, 3, 6, 5]\", "
      "g: \"f32[2, 3, 4, 5]\", bias: \"f32[4, 6]\"):\n";
  const std::string cpu =
      "        _fw = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu.default(q, k, v, 0.0, True, scale = 0.3)\n"
      "        out: \"f32[2, 3, 4, 5]\" = _fw[0]\n"
      "        lse: \"f32[2, 3, 4]\" = _fw[1]\n"
      "        _bw = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu_backward.default(g, q, k, v, out, lse, 0.0, True, scale = 0.3)\n";
  const std::string eff =
      "        _fw = torch.ops.aten._scaled_dot_product_efficient_attention.default(q, k, v, bias, True)\n"
      "        out: \"f32[2, 3, 4, 5]\" = _fw[0]\n"
      "        lse: \"f32[2, 3, 4]\" = _fw[1]\n"
      "        _bw = torch.ops.aten._scaled_dot_product_efficient_attention_backward.default(g, q, k, v, bias, out, lse, None, None, 0.0, [True, True, True, False])\n";
  const std::string tail =
      "        gq: \"f32[2, 3, 4, 5]\" = _bw[0]\n        gk: \"f32[2, 3, 6, 5]\" = _bw[1]\n"
      "        gv: \"f32[2, 3, 6, 5]\" = _bw[2]\n        return (out, gq, gk, gv)\n";
  for (const std::string* body : {&cpu, &eff}) {
    SCOPED_TRACE(body == &cpu ? "cpu flash" : "efficient");
    auto g = importFxText(head + *body + tail, "sdpa_bw.py", {});
    ASSERT_TRUE(g.ok()) << g.error().str();
    ir::TensorMap in{{"q", typed(DType::F32, {2, 3, 4, 5}, noise(120, 1))},
                     {"k", typed(DType::F32, {2, 3, 6, 5}, noise(180, 2))},
                     {"v", typed(DType::F32, {2, 3, 6, 5}, noise(180, 3))},
                     {"g", typed(DType::F32, {2, 3, 4, 5}, noise(120, 4))},
                     {"bias", typed(DType::F32, {4, 6}, noise(24, 5))}};
    auto o = ir::runGraph(*g, in);
    ASSERT_TRUE(o.ok()) << o.error().str();
    const auto gy = values(in.at("g"));
    for (auto [param, grad] : {std::pair<const char*, const char*>{"q", "gq"}, {"k", "gk"}, {"v", "gv"}}) {
      auto fd = fx_test::finiteDifferences(*g, in, param, "out", gy);
      expectNear(values(o->at(grad)), fd, 2e-3, grad);
    }
  }
}

}  // namespace
}  // namespace sp::frontend

namespace sp::frontend {
namespace {

// Elementwise and layout ops of torch 2.x captures (floor, ceil, sign,
// log1p, maximum, minimum, clamp_min / clamp_max, topk, stack, unbind):
// each gives torch's values.
TEST(FxOps, RoundingBoundsTopKStackAndUnbind) {
  const std::string text =
      "import torch\n\nclass GraphModule(torch.nn.Module):\n"
      "    def forward(self, x: \"f32[3, 4]\", y: \"f32[3, 4]\"):\n"
      "        floor: \"f32[3, 4]\" = torch.ops.aten.floor.default(x)\n"
      "        ceil: \"f32[3, 4]\" = torch.ops.aten.ceil.default(x)\n"
      "        sign: \"f32[3, 4]\" = torch.ops.aten.sign.default(x)\n"
      "        abs_1: \"f32[3, 4]\" = torch.ops.aten.abs.default(x)\n"
      "        log1p: \"f32[3, 4]\" = torch.ops.aten.log1p.default(abs_1)\n"
      "        maximum: \"f32[3, 4]\" = torch.ops.aten.maximum.default(x, y)\n"
      "        minimum: \"f32[3, 4]\" = torch.ops.aten.minimum.default(x, y)\n"
      "        clamp_min: \"f32[3, 4]\" = torch.ops.aten.clamp_min.default(x, -0.25)\n"
      "        clamp_max: \"f32[3, 4]\" = torch.ops.aten.clamp_max.default(x, 0.25)\n"
      "        topk = torch.ops.aten.topk.default(x, 2, 1, False)\n"
      "        getitem: \"f32[3, 2]\" = topk[0]\n"
      "        getitem_1: \"i64[3, 2]\" = topk[1]\n"
      "        stack: \"f32[3, 2, 4]\" = torch.ops.aten.stack.default([x, y], 1)\n"
      "        unbind = torch.ops.aten.unbind.int(stack, 1)\n"
      "        getitem_2: \"f32[3, 4]\" = unbind[0]\n"
      "        getitem_3: \"f32[3, 4]\" = unbind[1]\n"
      "        return (floor, ceil, sign, log1p, maximum, minimum, clamp_min, clamp_max, getitem, getitem_1, stack, "
      "getitem_2, getitem_3)\n";
  auto g = importFxText(text, "ops.py", {});
  ASSERT_TRUE(g.ok()) << g.error().str();
  auto x = noise(12, 11), y = noise(12, 12);
  for (auto& v : x) v *= 3;  // values beyond [-1, 1] for floor and ceil
  auto o = ir::runGraph(*g, {{"x", typed(DType::F32, {3, 4}, x)}, {"y", typed(DType::F32, {3, 4}, y)}});
  ASSERT_TRUE(o.ok()) << o.error().str();
  auto each = [&](double (*f)(double, double)) {
    std::vector<double> r;
    for (size_t i = 0; i < 12; ++i) r.push_back(f(x[i], y[i]));
    return r;
  };
  auto fx = [](double a, double) { return double(float(a)); };
  std::vector<double> xf = each(fx);
  expectNear(values(o->at("floor")), each([](double a, double) { return std::floor(double(float(a))); }), 0, "floor");
  expectNear(values(o->at("ceil")), each([](double a, double) { return std::ceil(double(float(a))); }), 0, "ceil");
  expectNear(values(o->at("sign")), each([](double a, double) { return double((a > 0) - (a < 0)); }), 0, "sign");
  expectNear(values(o->at("log1p")), each([](double a, double) { return std::log1p(std::fabs(a)); }), 1e-6, "log1p");
  expectNear(values(o->at("maximum")), each([](double a, double b) { return double(std::max(float(a), float(b))); }), 0,
             "maximum");
  expectNear(values(o->at("minimum")), each([](double a, double b) { return double(std::min(float(a), float(b))); }), 0,
             "minimum");
  expectNear(values(o->at("clamp_min")), each([](double a, double) { return double(std::max(float(a), -0.25f)); }), 0,
             "clamp_min");
  expectNear(values(o->at("clamp_max")), each([](double a, double) { return double(std::min(float(a), 0.25f)); }), 0,
             "clamp_max");
  // topk largest = False: the 2 smallest of each row, ascending
  std::vector<double> vals, idx;
  for (int r = 0; r < 3; ++r) {
    std::vector<int> order{0, 1, 2, 3};
    std::sort(order.begin(), order.end(), [&](int a, int b) { return xf[size_t(4 * r + a)] < xf[size_t(4 * r + b)]; });
    for (int k = 0; k < 2; ++k) vals.push_back(xf[size_t(4 * r + order[size_t(k)])]), idx.push_back(order[size_t(k)]);
  }
  expectNear(values(o->at("getitem")), vals, 0, "topk values");
  expectNear(values(o->at("getitem_1")), idx, 0, "topk indices");
  std::vector<double> st;
  for (int r = 0; r < 3; ++r)
    for (const auto* src : {&x, &y})
      for (int c = 0; c < 4; ++c) st.push_back(double(float((*src)[size_t(4 * r + c)])));
  expectNear(values(o->at("stack")), st, 0, "stack");
  expectNear(values(o->at("getitem_2")), xf, 0, "unbind 0");
  expectNear(values(o->at("getitem_3")), each([](double, double b) { return double(float(b)); }), 0, "unbind 1");
}

}  // namespace
}  // namespace sp::frontend

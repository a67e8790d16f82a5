// Capture forms that real torch captures contain (issue 15): `class <lambda>`
// headers, AOTAutograd joint graphs (declaration lines, tree_flatten_spec),
// SymInt annotations and data-dependent sizes, auto_functionalized_v2,
// index_put with [arange, target], new_empty_strided, argument aliases of
// framework kernels, and the order of lexical and parse errors. Each test
// imports a capture text written in the form torch prints.
#include <gtest/gtest.h>

#include <cmath>

#include "frontend/fx_import.h"
#include "frontend/fx_test_util.h"
#include "ir/interpreter.h"

namespace sp::frontend {
namespace {

using ir::DType;
using ir::Tensor;
using fx_test::noise;
using fx_test::typed;
using fx_test::values;

ir::Graph mustImportText(const std::string& text, const std::string& name) {
  auto g = importFxText(text, name);
  EXPECT_TRUE(g.ok()) << g.error().str();
  return g.ok() ? std::move(*g) : ir::Graph();
}

Tensor f32(std::vector<int64_t> dims, uint32_t seed) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return typed(DType::F32, dims, noise(size_t(n), seed));
}

TEST(FxCaptureForms, LambdaClassHeaderIsSkipped) {
  std::string text = R"FX(
class <lambda>(torch.nn.Module):
    def forward(self, arg0_1: "f32[2, 3]"):
        neg: "f32[2, 3]" = torch.ops.aten.neg.default(arg0_1);  arg0_1 = None
        return (neg,)
)FX";
  ir::Graph g = mustImportText(text, "lambda.py");
  ASSERT_EQ(g.nodes().size(), 1u);
  EXPECT_EQ(g.nodes()[0].op, ir::OpKind::Neg);
}

// torch 2.3+ prints strides and the device after the dims where asked
// (TORCH_LOGS graphs, print_readable(include_stride=True,
// include_device=True)): the same graph as without them, symbolic strides
// included; a stride list of the wrong length or a malformed device is an
// error naming the annotation.
TEST(FxCaptureForms, StridesAndDeviceInAnnotations) {
  ir::Graph g = mustImportText(R"FX(
class GraphModule(torch.nn.Module):
    def forward(self, s0: "Sym(s0)", x: "f32[s0, 4][4, 1]cuda:0", w: "f32[6, 4][4, 1]cpu", b: "bf16[][]cuda"):
        t: "f32[4, 6][1, 4]cuda:0" = torch.ops.aten.t.default(w)
        mm: "f32[s0, 6][6, 1]cuda:0" = torch.ops.aten.mm.default(x, t)
        view: "f32[s0, 2, 3][6, 3, 1]cuda:0" = torch.ops.aten.view.default(mm, [s0, 2, 3])
        return (view,)
)FX",
                               "strided.py");
  ASSERT_EQ(g.outputs().size(), 1u);
  EXPECT_EQ(g.value(g.outputs()[0]).type.str(), "f32[s0, 2, 3]");
  for (const char* bad : {R"("f32[2, 3][3]cpu")", R"("f32[2, 3][3, 1]cuda:x")", R"("f32[2, 3][3, 1]CPU")",
                          R"("f32[2, 3][3, 1")"}) {
    std::string text = std::string("def forward(self, x: ") + bad +
                       "):\n    neg: \"f32[2, 3]\" = torch.ops.aten.neg.default(x)\n    return (neg,)\n";
    auto r = importFxText(text, "bad.py");
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().id, "fx-type") << r.error().str();
  }
}

// A graph copied from TORCH_LOGS=aot_graphs output: the log record's
// header before the class line (skipped with the preamble), strides and
// devices, and the ANSI color codes the logs print, dropped.
TEST(FxCaptureForms, GraphCopiedFromTorchLogs) {
  std::string text =
      "V1127 12:00:00.123000 4242 torch/_functorch/_aot_autograd/dispatch_and_compile_graph.py:215] [0/0] "
      "[__aot_graphs] TRACED GRAPH\n"
      " ===== Forward graph 0 ===== /usr/lib/python3/dist-packages/torch/fx/_lazy_graph_module.py "
      "class GraphModule(torch.nn.Module):\n"
      "    def forward(self, primals_1: \"\x1b[31mf32[2, 3][3, 1]cuda:0\x1b[0m\"):\n"
      "        \x1b[1mneg\x1b[0m: \"f32[2, 3][3, 1]cuda:0\" = torch.ops.aten.neg.default(primals_1);  primals_1 = None\n"
      "        return (neg,)\n"
      "        \n";
  ir::Graph g = mustImportText(text, "aot_graphs.log");
  ASSERT_EQ(g.nodes().size(), 1u);
  EXPECT_EQ(g.nodes()[0].op, ir::OpKind::Neg);
  EXPECT_EQ(g.value(g.outputs()[0]).type.str(), "f32[2, 3]");
}

// torch.export's training IR keeps layer_norm, rms_norm, softmax and
// dropout undecomposed, with their defaults left out of the call.
TEST(FxCaptureForms, ExportTrainingIrNormsAndSoftmax) {
  ir::Graph g = mustImportText(R"FX(
class GraphModule(torch.nn.Module):
    def forward(self, p_ln_weight: "f32[4]", p_ln_bias: "f32[4]", p_rms_weight: "f32[4]", x: "f32[3, 4]"):
        layer_norm: "f32[3, 4]" = torch.ops.aten.layer_norm.default(x, [4], p_ln_weight, p_ln_bias)
        rms_norm: "f32[3, 4]" = torch.ops.aten.rms_norm.default(layer_norm, [4], p_rms_weight, 1e-06)
        rms_plain: "f32[3, 4]" = torch.ops.aten.rms_norm.default(x, [4])
        dropout: "f32[3, 4]" = torch.ops.aten.dropout.default(rms_norm, 0.1, False)
        softmax: "f32[3, 4]" = torch.ops.aten.softmax.int(dropout, -1)
        log_softmax: "f32[3, 4]" = torch.ops.aten.log_softmax.int(rms_plain, 1)
        return (softmax, log_softmax, layer_norm)
)FX",
                               "export.py");
  std::map<ir::OpKind, int> count;
  for (const auto& n : g.nodes()) ++count[n.op];
  EXPECT_EQ(count[ir::OpKind::LayerNorm], 1);
  EXPECT_EQ(count[ir::OpKind::RmsNorm], 2);
  EXPECT_EQ(count[ir::OpKind::Softmax], 1);
  EXPECT_EQ(count[ir::OpKind::LogSoftmax], 1);
  EXPECT_EQ(count[ir::OpKind::Dropout], 0);  // train=False: the identity
  for (const auto& n : g.nodes())
    if (n.op == ir::OpKind::LayerNorm) EXPECT_EQ(ir::attrFloat(n.attrs, "epsilon"), 1e-5);
    else if (n.op == ir::OpKind::RmsNorm && n.inputs.size() == 1)  // eps None: f32's machine epsilon
      EXPECT_EQ(ir::attrFloat(n.attrs, "epsilon"), 1.1920928955078125e-07);
  Tensor x = f32({3, 4}, 4), w = f32({4}, 5), b = f32({4}, 6), r = f32({4}, 7);
  auto out = ir::runGraph(g, {{"x", x}, {"p_ln_weight", w}, {"p_ln_bias", b}, {"p_rms_weight", r}});
  ASSERT_TRUE(out.ok()) << out.error().str();
  auto sm = values(out->at("softmax")), ls = values(out->at("log_softmax")), xs = values(x);
  for (size_t row = 0; row < 3; ++row) {
    double s = 0, e = 0;
    for (size_t k = 0; k < 4; ++k) s += sm[row * 4 + k], e += std::exp(ls[row * 4 + k]);
    EXPECT_NEAR(s, 1.0, 1e-5);
    EXPECT_NEAR(e, 1.0, 1e-5);
    // log_softmax of x / rms(x): its argmax is x's
    size_t ax = 0, al = 0;
    for (size_t k = 1; k < 4; ++k) {
      if (xs[row * 4 + k] > xs[row * 4 + ax]) ax = k;
      if (ls[row * 4 + k] > ls[row * 4 + al]) al = k;
    }
    EXPECT_EQ(ax, al);
  }
}

// Layout ops that torch.export's training IR may keep: chunk (pieces of
// ceil(n / chunks)), narrow, flatten, unflatten, type_as.
TEST(FxCaptureForms, ExportTrainingIrLayoutOps) {
  ir::Graph g = mustImportText(R"FX(
class GraphModule(torch.nn.Module):
    def forward(self, x: "f32[2, 5, 3]", h: "f16[2]"):
        chunk = torch.ops.aten.chunk.default(x, 2, 1)
        getitem: "f32[2, 3, 3]" = chunk[0]
        getitem_1: "f32[2, 2, 3]" = chunk[1];  chunk = None
        narrow: "f32[2, 2, 3]" = torch.ops.aten.narrow.default(x, 1, -3, 2)
        flatten: "f32[2, 15]" = torch.ops.aten.flatten.using_ints(x, 1)
        unflatten: "f32[2, 5, 3]" = torch.ops.aten.unflatten.int(flatten, 1, [5, 3])
        type_as: "f16[2, 5, 3]" = torch.ops.aten.type_as.default(unflatten, h)
        return (getitem, getitem_1, narrow, type_as)
)FX",
                               "export_layout.py");
  Tensor x = f32({2, 5, 3}, 8), h = typed(DType::F16, {2}, noise(2, 9));
  auto out = ir::runGraph(g, {{"x", x}, {"h", h}});
  ASSERT_TRUE(out.ok()) << out.error().str();
  auto xs = values(x);
  auto at = [&](int64_t i, int64_t j, int64_t k) { return xs[size_t((i * 5 + j) * 3 + k)]; };
  auto c0 = values(out->at("getitem")), c1 = values(out->at("getitem_1")), nw = values(out->at("narrow"));
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t k = 0; k < 3; ++k) {
      for (int64_t j = 0; j < 3; ++j) EXPECT_EQ(c0[size_t((i * 3 + j) * 3 + k)], at(i, j, k));
      for (int64_t j = 0; j < 2; ++j) {
        EXPECT_EQ(c1[size_t((i * 2 + j) * 3 + k)], at(i, 3 + j, k));
        EXPECT_EQ(nw[size_t((i * 2 + j) * 3 + k)], at(i, 2 + j, k));
      }
    }
  EXPECT_EQ(out->at("type_as").dtype(), DType::F16);
  auto bad = importFxText(R"FX(
class GraphModule(torch.nn.Module):
    def forward(self, x: "f32[2, 5]"):
        narrow: "f32[2, 4]" = torch.ops.aten.narrow.default(x, 1, 3, 4)
        return (narrow,)
)FX",
                          "bad_narrow.py");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("narrow of [3, +4) is outside dim 1 of size 5"), std::string::npos)
      << bad.error().str();
}

// torch 1.13's make_fx writes a reshape that can be a view as
// `_reshape_alias(x, size, stride)`: the reshape to `size` (the strides
// only say where the view's elements lie in memory).
TEST(FxCaptureForms, ReshapeAliasIsAReshape) {
  ir::Graph g = mustImportText(R"FX(
class GraphModule(torch.nn.Module):
    def forward(self, x: "f32[3, 4]"):
        t: "f32[4, 3]" = torch.ops.aten.t.default(x)
        _reshape_alias: "f32[2, 6]" = torch.ops.aten._reshape_alias.default(x, [2, 6], [6, 1])
        return (_reshape_alias, t)
)FX",
                               "alias.py");
  ASSERT_EQ(g.nodes().size(), 2u);
  EXPECT_EQ(g.nodes()[1].op, ir::OpKind::Reshape);
  Tensor x = f32({3, 4}, 9);
  auto out = ir::runGraph(g, {{"x", x}});
  ASSERT_TRUE(out.ok()) << out.error().str();
  EXPECT_EQ(values(out->at("_reshape_alias")), values(x));
}

// Megatron's scatter to a parallel region, `torch.split(x, n, dim)[rank]`:
// a split of which one piece is read (the other getitem lines unused)
// imports as the slice of that piece, so rank graphs that differ only in
// the piece they read differ only in slice bounds (rank folding); a split
// read at two pieces stays a split.
TEST(FxCaptureForms, SplitReadAtOnePieceIsItsSlice) {
  auto capture = [](int piece, bool both) {
    std::string read = "getitem_" + std::to_string(piece);
    return std::string(R"FX(
class GraphModule(torch.nn.Module):
    def forward(self, x: "f32[6, 2]"):
        split = torch.ops.aten.split.Tensor(x, 2)
        getitem_0: "f32[2, 2]" = split[0]
        getitem_1: "f32[2, 2]" = split[1]
        getitem_2: "f32[2, 2]" = split[2];  split = None
        neg: "f32[2, 2]" = torch.ops.aten.neg.default()FX") +
           read + ")\n        " + (both ? "add: \"f32[2, 2]\" = torch.ops.aten.add.Tensor(neg, getitem_0)\n        return (add,)\n"
                                       : "return (neg,)\n");
  };
  Tensor x = f32({6, 2}, 5);
  auto xs = values(x);
  for (int piece : {0, 1, 2}) {
    ir::Graph g = mustImportText(capture(piece, false), "scatter.py");
    ASSERT_EQ(g.nodes().size(), 2u);
    EXPECT_EQ(g.nodes()[0].op, ir::OpKind::Slice);
    EXPECT_EQ(ir::attrInts(g.nodes()[0].attrs, "starts"), std::vector<int64_t>{2 * piece});
    EXPECT_EQ(ir::attrInts(g.nodes()[0].attrs, "ends"), std::vector<int64_t>{2 * piece + 2});
    auto out = ir::runGraph(g, {{"x", x}});
    ASSERT_TRUE(out.ok()) << out.error().str();
    auto y = values(out->at("neg"));
    for (size_t i = 0; i < 4; ++i) EXPECT_EQ(y[i], -xs[size_t(4 * piece) + i]);
  }
  ir::Graph two = mustImportText(capture(2, true), "scatter2.py");
  EXPECT_EQ(two.nodes()[0].op, ir::OpKind::Split);
}

// The joint graph AOTAutograd prints for y = x @ w with its backward: the
// containers `primals` and `tangents` are flattened into declared names.
const char* kJoint = R"FX(
class joint_helper(torch.nn.Module):
    def forward(self, primals, tangents):
        primals_1: "f32[3, 4]"; primals_2: "f32[2, 3]"; tangents_1: "f32[2, 4]"; 

        primals_1, primals_2, tangents_1, = fx_pytree.tree_flatten_spec([primals, tangents], self._in_spec)
        # File: /src/lin.py:7 in forward, code: return x @ self.w
        mm: "f32[2, 4]" = torch.ops.aten.mm.default(primals_2, primals_1)
        permute: "f32[3, 2]" = torch.ops.aten.permute.default(primals_2, [1, 0]);  primals_2 = None
        mm_1: "f32[3, 4]" = torch.ops.aten.mm.default(permute, tangents_1);  permute = tangents_1 = None
        return pytree.tree_unflatten([mm, mm_1, None], self._out_spec)
)FX";

TEST(FxCaptureForms, AotJointGraphImports) {
  ir::Graph g = mustImportText(kJoint, "joint.py");
  ASSERT_EQ(g.inputs().size(), 3u);
  EXPECT_EQ(g.value(g.inputs()[0]).name, "primals_1");
  EXPECT_EQ(g.value(g.inputs()[2]).name, "tangents_1");
  EXPECT_EQ(g.value(g.inputs()[2]).type.str(), "f32[2, 4]");
  EXPECT_EQ(g.value(g.inputs()[0]).loc.line, 4);  // the declaration line
  ASSERT_EQ(g.outputs().size(), 2u);
  Tensor w = f32({3, 4}, 1), x = f32({2, 3}, 2), t = f32({2, 4}, 3);
  auto out = ir::runGraph(g, {{"primals_1", w}, {"primals_2", x}, {"tangents_1", t}});
  ASSERT_TRUE(out.ok()) << out.error().str();
  auto xs = values(x), ws = values(w), ts = values(t);
  auto y = values(out->at("mm")), gw = values(out->at("mm_1"));
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 4; ++j) {
      double want = 0;
      for (int k = 0; k < 3; ++k) want += xs[size_t(i * 3 + k)] * ws[size_t(k * 4 + j)];
      EXPECT_NEAR(y[size_t(i * 4 + j)], want, 1e-6);
    }
  for (int k = 0; k < 3; ++k)
    for (int j = 0; j < 4; ++j) {
      double want = 0;
      for (int i = 0; i < 2; ++i) want += xs[size_t(i * 3 + k)] * ts[size_t(i * 4 + j)];
      EXPECT_NEAR(gw[size_t(k * 4 + j)], want, 1e-6);
    }
}

TEST(FxCaptureForms, JointGraphNeedsDeclarations) {
  std::string text = R"FX(
class joint_helper(torch.nn.Module):
    def forward(self, primals, tangents):
        primals_1: "f32[3]"; 
        primals_1, tangents_1, = fx_pytree.tree_flatten_spec([primals, tangents], self._in_spec)
        return [primals_1]
)FX";
  auto g = importFxText(text, "undeclared.py");
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.error().str(),
            "undeclared.py:5: 'tangents_1' is unpacked from tree_flatten_spec but has no declaration line "
            "('tangents_1: \"f32[...]\";')");
}

// The backward graph AOTAutograd compiles separately: typed primals and tangents.
TEST(FxCaptureForms, AotBackwardGraphImports) {
  std::string text = R"FX(
class GraphModule(torch.nn.Module):
    def forward(self, primals_2: "f32[2, 3]", tangents_1: "f32[2, 4]"):
        permute: "f32[3, 2]" = torch.ops.aten.permute.default(primals_2, [1, 0]);  primals_2 = None
        mm_1: "f32[3, 4]" = torch.ops.aten.mm.default(permute, tangents_1);  permute = tangents_1 = None
        return (mm_1, None)
)FX";
  ir::Graph g = mustImportText(text, "bw.py");
  EXPECT_EQ(g.inputs().size(), 2u);
  EXPECT_EQ(g.outputs().size(), 1u);
}

// Dynamic shapes: a SymInt argument, a size query, a runtime assertion on
// it, and arithmetic on sizes.
TEST(FxCaptureForms, SymIntsImport) {
  std::string text = R"FX(
class GraphModule(torch.nn.Module):
    def forward(self, arg0_1: "Sym(s0)", arg1_1: "f32[s0, 8]"):
        sym_size_int: "Sym(s0)" = torch.ops.aten.sym_size.int(arg1_1, 0)
        ge: "Sym(s0 >= 2)" = sym_size_int >= 2
        _assert_scalar = torch.ops.aten._assert_scalar.default(ge, "Runtime assertion failed for expression s0 >= 2 on node 'ge'");  ge = None
        mul: "Sym(2*s0)" = 2 * sym_size_int
        view: "f32[s0, 2, 4]" = torch.ops.aten.view.default(arg1_1, [sym_size_int, 2, 4]);  arg1_1 = None
        relu: "f32[s0, 2, 4]" = torch.ops.aten.relu.default(view);  view = None
        return (relu,)
)FX";
  ir::Graph g = mustImportText(text, "sym.py");
  ASSERT_EQ(g.inputs().size(), 1u);  // the SymInt is a size, not an input
  EXPECT_EQ(g.value(g.inputs()[0]).type.str(), "f32[s0, 8]");
  Tensor x = f32({3, 8}, 4);
  auto out = ir::runGraph(g, {{"arg1_1", x}});
  ASSERT_TRUE(out.ok()) << out.error().str();
  EXPECT_EQ(out->at("relu").dims(), (std::vector<int64_t>{3, 2, 4}));
  auto xs = values(x), r = values(out->at("relu"));
  for (size_t i = 0; i < xs.size(); ++i) EXPECT_EQ(r[i], std::max(0.0, xs[i]));
}

TEST(FxCaptureForms, SymbolicSizeAsArgumentIsNamed) {
  std::string text = R"FX(
class GraphModule(torch.nn.Module):
    def forward(self, arg0_1: "Sym(s0)", arg1_1: "f32[s0, 8]"):
        sum_1: "f32[8]" = torch.ops.aten.sum.dim_IntList(arg1_1, [arg0_1])
        return (sum_1,)
)FX";
  auto g = importFxText(text, "symarg.py");
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.error().location, "symarg.py:4");
  EXPECT_NE(g.error().message.find("'arg0_1' is the symbolic size Sym(s0); sizes passed as arguments must be known "
                                   "integers"),
            std::string::npos)
      << g.error().str();
}

// nonzero's size u0 depends on the data: a clear error naming the op.
TEST(FxCaptureForms, DataDependentSizeNamesTheOp) {
  std::string text = R"FX(
class GraphModule(torch.nn.Module):
    def forward(self, arg0_1: "f32[8]"):
        gt: "b8[8]" = torch.ops.aten.gt.Scalar(arg0_1, 0)
        nonzero: "i64[u0, 1]" = torch.ops.aten.nonzero.default(gt);  gt = None
        sym_size_int: "Sym(u0)" = torch.ops.aten.sym_size.int(nonzero, 0)
        ge: "Sym(u0 >= 0)" = sym_size_int >= 0
        _assert_scalar = torch.ops.aten._assert_scalar.default(ge, "Runtime assertion failed for expression u0 >= 0 on node 'ge'")
        return (nonzero,)
)FX";
  auto g = importFxText(text, "nonzero.py");
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.error().id, "fx-data-dependent");
  EXPECT_EQ(g.error().str(),
            "nonzero.py:5: node 'nonzero' (aten.nonzero.default) has the data-dependent size u0 (i64[u0, 1]): its "
            "extent depends on tensor values, not on input shapes, so S and D cannot be related; a model with a "
            "static size there is needed");
}

// vLLM through auto_functionalized_v2, with the argument names of another
// vLLM version (`out` for silu_and_mul's `result`).
TEST(FxCaptureForms, AutoFunctionalizedV2UnwrapsTheKernel) {
  std::string text = R"FX(
class GraphModule(torch.nn.Module):
    def forward(self, x: "f32[4, 8]", w: "f32[8]", g: "f32[4, 8]"):
        empty: "f32[4, 8]" = torch.ops.aten.empty.memory_format([4, 8], dtype = torch.float32, device = device(type='cuda', index=0), pin_memory = False)
        auto_functionalized_v2 = torch.ops.higher_order.auto_functionalized_v2(torch.ops._C.rms_norm.default, input = x, weight = w, epsilon = 1e-06, _result_base_index = 0, _all_bases = [empty]);  empty = None
        getitem_1: "f32[4, 8]" = auto_functionalized_v2[1];  auto_functionalized_v2 = None
        empty_1: "f32[4, 4]" = torch.ops.aten.empty.memory_format([4, 4], dtype = torch.float32, device = device(type='cuda', index=0), pin_memory = False)
        auto_functionalized_v2_1 = torch.ops.higher_order.auto_functionalized_v2(torch.ops._C.silu_and_mul.default, input = g, _out_base_index = 0, _all_bases = [empty_1]);  empty_1 = None
        getitem_3: "f32[4, 4]" = auto_functionalized_v2_1[1];  auto_functionalized_v2_1 = None
        return (getitem_1, getitem_3)
)FX";
  ir::Graph g = mustImportText(text, "v2.py");
  Tensor x = f32({4, 8}, 5), w = f32({8}, 6), gi = f32({4, 8}, 7);
  auto out = ir::runGraph(g, {{"x", x}, {"w", w}, {"g", gi}});
  ASSERT_TRUE(out.ok()) << out.error().str();
  auto xs = values(x), ws = values(w), gs = values(gi);
  auto rn = values(out->at("getitem_1")), sm = values(out->at("getitem_3"));
  for (int i = 0; i < 4; ++i) {
    double ms = 0;
    for (int j = 0; j < 8; ++j) ms += xs[size_t(i * 8 + j)] * xs[size_t(i * 8 + j)] / 8;
    for (int j = 0; j < 8; ++j)
      EXPECT_NEAR(rn[size_t(i * 8 + j)], xs[size_t(i * 8 + j)] / std::sqrt(ms + 1e-6) * ws[size_t(j)], 1e-5);
    for (int j = 0; j < 4; ++j) {
      double a = gs[size_t(i * 8 + j)], b = gs[size_t(i * 8 + 4 + j)];
      EXPECT_NEAR(sm[size_t(i * 4 + j)], a / (1 + std::exp(-a)) * b, 1e-6);
    }
  }
}

TEST(FxCaptureForms, AutoFunctionalizedV2ViewsAreRejected) {
  std::string text = R"FX(
class GraphModule(torch.nn.Module):
    def forward(self, g: "f32[4, 8]", buf: "f32[16]"):
        auto_functionalized_v2 = torch.ops.higher_order.auto_functionalized_v2(torch.ops._C.silu_and_mul.default, input = g, _result_base_index = 0, _result_size = (4, 4), _result_stride = (4, 1), _result_storage_offset = 0, _all_bases = [buf])
        getitem_1: "f32[16]" = auto_functionalized_v2[1]
        return (getitem_1,)
)FX";
  auto g = importFxText(text, "v2view.py");
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.error().str(),
            "v2view.py:4: auto_functionalized_v2 of _C.silu_and_mul.default: '_result_size' (a mutated argument that "
            "is a view of its base) is not supported; only whole bases can be imported");
}

// Megatron-style x[arange(n), target] = v (and += v).
TEST(FxCaptureForms, IndexPutWithArangeAndTarget) {
  std::string text = R"FX(
class GraphModule(torch.nn.Module):
    def forward(self, x: "f32[3, 5]", target: "i64[3]", v: "f32[3]"):
        arange: "i64[3]" = torch.ops.aten.arange.start(0, 3, device = device(type='cuda', index=0), pin_memory = False)
        index_put: "f32[3, 5]" = torch.ops.aten.index_put.default(x, [arange, target], v)
        index_put_1: "f32[3, 5]" = torch.ops.aten.index_put.default(x, [arange, target], v, True)
        new_empty_strided: "f32[3, 5]" = torch.ops.aten.new_empty_strided.default(x, [3, 5], [5, 1])
        copy: "f32[3, 5]" = torch.ops.aten.copy.default(new_empty_strided, index_put);  new_empty_strided = None
        return (copy, index_put_1)
)FX";
  ir::Graph g = mustImportText(text, "index_put.py");
  Tensor x = f32({3, 5}, 8), v = f32({3}, 9);
  Tensor t = typed(DType::I64, {3}, {4, 0, 2});
  auto out = ir::runGraph(g, {{"x", x}, {"target", t}, {"v", v}});
  ASSERT_TRUE(out.ok()) << out.error().str();
  std::vector<double> set = values(x), add = values(x), vs = values(v);
  std::vector<int> tv = {4, 0, 2};
  for (int i = 0; i < 3; ++i) {
    set[size_t(i * 5 + tv[size_t(i)])] = vs[size_t(i)];
    add[size_t(i * 5 + tv[size_t(i)])] += vs[size_t(i)];
  }
  fx_test::expectNear(values(out->at("copy")), set, 1e-7, "index_put");
  fx_test::expectNear(values(out->at("index_put_1")), add, 1e-6, "index_put accumulate");
}

// index_put with the index after None entries (what `x[:, m] = v` and
// `x[:, idx] = v` become): a mask over dim 1 and a 2-d mask over dims 1-2,
// values broadcast to the selected elements (for any count of them), an
// integer index on dim 1; values of the whole tensor's shape, which torch
// accepts only for one count of true values, and a u8 index (a mask to
// torch) are errors.
TEST(FxCaptureForms, IndexPutAfterNoneEntries) {
  std::string text = R"FX(
class GraphModule(torch.nn.Module):
    def forward(self, x: "f32[2, 3, 2]", m: "b8[3]", mm: "b8[3, 2]", i: "i64[2]", v: "f32[2, 1, 2]", w: "f32[2, 1]"):
        index_put: "f32[2, 3, 2]" = torch.ops.aten.index_put.default(x, [None, m], v)
        index_put_1: "f32[2, 3, 2]" = torch.ops.aten.index_put.default(x, [None, mm], w)
        index_put_2: "f32[2, 3, 2]" = torch.ops.aten.index_put.default(x, [None, i], v, True)
        return (index_put, index_put_1, index_put_2)
)FX";
  ir::Graph g = mustImportText(text, "index_put_none.py");
  std::vector<double> xs = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};  // x[a][b][c] = 6 a + 2 b + c
  auto out = ir::runGraph(g, {{"x", typed(DType::F32, {2, 3, 2}, xs)},
                              {"m", typed(DType::Bool, {3}, {1, 0, 1})},
                              {"mm", typed(DType::Bool, {3, 2}, {0, 1, 0, 0, 1, 0})},
                              {"i", typed(DType::I64, {2}, {2, 0})},
                              {"v", typed(DType::F32, {2, 1, 2}, {-1, -2, -3, -4})},
                              {"w", typed(DType::F32, {2, 1}, {50, 60})}});
  ASSERT_TRUE(out.ok()) << out.error().str();
  EXPECT_EQ(values(out->at("index_put")), (std::vector<double>{-1, -2, 2, 3, -1, -2, -3, -4, 8, 9, -3, -4}));
  EXPECT_EQ(values(out->at("index_put_1")), (std::vector<double>{0, 50, 2, 3, 50, 5, 6, 60, 8, 9, 60, 11}));
  EXPECT_EQ(values(out->at("index_put_2")), (std::vector<double>{-1, -1, 2, 3, 3, 3, 3, 3, 8, 9, 7, 7}));
  for (const auto& [body, want] : std::vector<std::pair<std::string, std::string>>{
           {"torch.ops.aten.index_put.default(x, [m], x)",
            "bad.py:3: aten.index_put.default 'index_put': index_put values f32[3, 4] must broadcast to [n, 4] (the "
            "selected elements of f32[3, 4], n of them)"},
           {"torch.ops.aten.index_put.default(x, [u], x)",
            "bad.py:3: aten.index_put.default 'index_put': index_put with a u8 index (torch reads it as a mask, "
            "deprecated) is not supported; a b8 mask is"}}) {
    auto bad = importFxText("class GraphModule(torch.nn.Module):\n"
                            "    def forward(self, x: \"f32[3, 4]\", m: \"b8[3]\", u: \"u8[3]\"):\n"
                            "        index_put: \"f32[3, 4]\" = " + body + "\n        return (index_put,)\n",
                            "bad.py");
    ASSERT_FALSE(bad.ok()) << body;
    EXPECT_EQ(bad.error().str(), want);
  }
}

// The first error in reading order wins, lexical or not; text after the
// return (other methods) is not read.
TEST(FxCaptureForms, ErrorsInReadingOrder) {
  std::string text =
      "class GraphModule(torch.nn.Module):\n"
      "    def forward(self, x: \"f32[2]\"):\n"
      "        y: \"f32[2]\" = torch.ops.aten.neg.default(x,, )\n"
      "        z: \"f32[2]\" = torch.ops.aten.neg.default(y) $ 1\n"
      "        return [z]\n";
  auto g = importFxText(text, "order.py");
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.error().str(), "order.py:3:52: expected an expression, got ','");
  std::string lexical =
      "class GraphModule(torch.nn.Module):\n"
      "    def forward(self, x: \"f32[2]\"):\n"
      "        y: \"f32[2]\" = torch.ops.aten.neg.default(x) $ 1\n"
      "        return [y]\n";
  auto h = importFxText(lexical, "lexical.py");
  ASSERT_FALSE(h.ok());
  EXPECT_EQ(h.error().str(), "lexical.py:3:53: unexpected character '$'");
  std::string after =
      "class GraphModule(torch.nn.Module):\n"
      "    def forward(self, x: \"f32[2]\"):\n"
      "        y: \"f32[2]\" = torch.ops.aten.neg.default(x)\n"
      "        return [y]\n"
      "    def helper(self) -> `str`:\n"
      "        return 'unterminated\n";
  auto k = importFxText(after, "after.py");
  EXPECT_TRUE(k.ok()) << k.error().str();
}

}  // namespace
}  // namespace sp::frontend

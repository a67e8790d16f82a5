// Tests of the torch.fx importer: hand-written captures in tests/data/fx
// (structure, types, locations and numbers), diagnostics, and the shared
// Megatron corpus when it is present.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <map>

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


Tensor floats(std::vector<int64_t> dims, std::vector<float> v) {
  return Tensor::fromFloats(DType::F32, std::move(dims), v);
}

const ir::Node& producer(const ir::Graph& g, const std::string& value) {
  auto id = g.findValue(value);
  EXPECT_TRUE(id.has_value()) << value;
  return g.node(g.value(*id).producer);
}

ir::Graph mustImport(const std::string& file, const FxOptions& opts = {}) {
  auto g = importFxGraph(kData + file, opts);
  EXPECT_TRUE(g.ok()) << g.error().str();
  return g.ok() ? std::move(*g) : ir::Graph();
}

// ------------------------------------------------------------------ parser

TEST(FxParse, LiteralsKwargsAndChainedDeletes) {
  std::string text = R"(
import torch
class GraphModule(torch.nn.Module):
    def forward(self, x: "f32[2, 3]", m: "b8[2, 3]"):
        # No stacktrace found for following nodes
        masked_fill: "f32[2, 3]" = torch.ops.aten.masked_fill.Scalar(x, m, -inf);  x = m = None  # trailing
        full: "f32[2]" = torch.ops.aten.full.default([2], 1e-05, dtype = torch.float32, layout = torch.strided, device = device(type='cuda', index=0), pin_memory = False)
        return (masked_fill, full)
)";
  auto g = importFxText(text, "inline.py");
  ASSERT_TRUE(g.ok()) << g.error().str();
  EXPECT_EQ(g->outputs().size(), 2u);
  const ir::Node& w = producer(*g, "masked_fill");
  EXPECT_EQ(w.op, ir::OpKind::Where);
  EXPECT_TRUE(w.loc.file.empty());  // no stack trace: no framework location
  auto out = ir::runGraph(*g, {{"x", floats({2, 3}, {1, 2, 3, 4, 5, 6})},
                               {"m", typed(DType::Bool, {2, 3}, {1, 0, 0, 0, 0, 1})}});
  ASSERT_TRUE(out.ok()) << out.error().str();
  auto mf = values(out->at("masked_fill"));
  EXPECT_TRUE(std::isinf(mf[0]) && mf[0] < 0);
  EXPECT_EQ(mf[1], 2);
  EXPECT_FLOAT_EQ(float(values(out->at("full"))[1]), 1e-05f);
}

TEST(FxParse, SourceLocationsFromFileComments) {
  ir::Graph g = mustImport("mlp_seq.py");
  const ir::Node& mm = producer(g, "mm");
  EXPECT_EQ(mm.loc.file, "/src/mlp.py");
  EXPECT_EQ(mm.loc.line, 12);
  EXPECT_EQ(mm.loc.detail, "forward");
  EXPECT_EQ(producer(g, "gelu").loc.line, 11);
  EXPECT_EQ(attrStr(producer(g, "gelu").attrs, "approximate"), "tanh");
}

TEST(FxParse, MalformedLineReportsLineAndColumn) {
  std::string text =
      "class GraphModule(torch.nn.Module):\n"
      "    def forward(self, x: \"f32[2]\"):\n"
      "        y: \"f32[2]\" = torch.ops.aten.neg.default(x,, )\n"
      "        return [y]\n";
  auto g = importFxText(text, "bad.py");
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.error().id, "fx-syntax");
  EXPECT_EQ(g.error().location, "bad.py:3:52");
  EXPECT_EQ(g.error().message, "expected an expression, got ','");
}

TEST(FxParse, MissingForwardAndBadAnnotation) {
  auto g = importFxText("import torch\n", "empty.py");
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.error().message, "no 'def forward(' in the capture");
  auto h = importFxText("def forward(self, x: \"c64[2]\"):\n    return [x]\n", "c.py");
  ASSERT_FALSE(h.ok());
  EXPECT_EQ(h.error().id, "fx-type");
  EXPECT_EQ(h.error().location, "c.py:1");
  EXPECT_EQ(h.error().message,
            "forward argument 'x': unsupported dtype 'c64' in type annotation 'c64[2]'");
  auto u = importFxText("def forward(self, x):\n    return [x]\n", "u.py");
  ASSERT_FALSE(u.ok());
  EXPECT_EQ(u.error().str(), "u.py:1: forward argument 'x' has no type annotation");
}

// print(exported_program): torch.export's graph signature, in the form
// torch 2.5 on prints and in the one-line ExportGraphSignature(...) form,
// says which forward arguments are the module's parameters, buffers and
// constant tensors: those import as params, the user inputs as inputs. A
// signature naming an argument forward lacks, or an output it does not
// return, is an error at the signature's line.
TEST(FxParse, ExportedProgramSignatureMarksParameters) {
  const std::string body =
      "ExportedProgram:\n"
      "    class GraphModule(torch.nn.Module):\n"
      "        def forward(self, p_linear_weight: \"f32[4, 8]\", p_linear_bias: \"f32[4]\", b_running: \"f32[4]\", "
      "c_lifted_tensor_0: \"f32[]\", x: \"f32[2, 8]\"):\n"
      "            # File: /tmp/m.py:10 in forward, code: return self.linear(x)\n"
      "            linear: \"f32[2, 4]\" = torch.ops.aten.linear.default(x, p_linear_weight, p_linear_bias);  x = "
      "p_linear_weight = p_linear_bias = None\n"
      "            add: \"f32[4]\" = torch.ops.aten.add.Tensor(b_running, c_lifted_tensor_0);  b_running = None\n"
      "            relu: \"f32[2, 4]\" = torch.ops.aten.relu.default(linear);  linear = None\n"
      "            return (add, relu)\n"
      "            \n";
  const std::string pretty =
      "Graph signature: \n"
      "    # inputs\n"
      "    p_linear_weight: PARAMETER target='linear.weight'\n"
      "    p_linear_bias: PARAMETER target='linear.bias'\n"
      "    b_running: BUFFER target='running' persistent=True\n"
      "    c_lifted_tensor_0: CONSTANT_TENSOR target='lifted_tensor_0'\n"
      "    x: USER_INPUT\n"
      "    \n"
      "    # outputs\n"
      "    add: BUFFER_MUTATION target='running'\n"
      "    relu: USER_OUTPUT\n"
      "    \n"
      "Range constraints: {}\n";
  const std::string oneLine =
      "Graph signature: ExportGraphSignature(input_specs=[InputSpec(kind=<InputKind.PARAMETER: 2>, "
      "arg=TensorArgument(name='p_linear_weight'), target='linear.weight', persistent=None), "
      "InputSpec(kind=<InputKind.PARAMETER: 2>, arg=TensorArgument(name='p_linear_bias'), target='linear.bias', "
      "persistent=None), InputSpec(kind=<InputKind.BUFFER: 3>, arg=TensorArgument(name='b_running'), "
      "target='running', persistent=True), InputSpec(kind=<InputKind.CONSTANT_TENSOR: 4>, "
      "arg=TensorArgument(name='c_lifted_tensor_0'), target='lifted_tensor_0', persistent=None), "
      "InputSpec(kind=<InputKind.USER_INPUT: 1>, arg=TensorArgument(name='x'), target=None, persistent=None)], "
      "output_specs=[OutputSpec(kind=<OutputKind.BUFFER_MUTATION: 3>, arg=TensorArgument(name='add'), "
      "target='running'), OutputSpec(kind=<OutputKind.USER_OUTPUT: 1>, arg=TensorArgument(name='relu'), "
      "target=None)])\n"
      "Range constraints: {}\n";
  for (const std::string& sig : {pretty, oneLine}) {
    auto g = importFxText(body + sig, "ep.py");
    ASSERT_TRUE(g.ok()) << g.error().str();
    std::vector<std::string> params, inputs;
    for (auto v : g->params()) params.push_back(g->value(v).name);
    for (auto v : g->inputs()) inputs.push_back(g->value(v).name);
    EXPECT_EQ(params, (std::vector<std::string>{"p_linear_weight", "p_linear_bias", "b_running", "c_lifted_tensor_0"}));
    EXPECT_EQ(inputs, (std::vector<std::string>{"x"}));
    EXPECT_EQ(g->outputs().size(), 2u);
  }
  // Without a signature every argument is an input, as before.
  auto plain = importFxText(body, "ep.py");
  ASSERT_TRUE(plain.ok()) << plain.error().str();
  EXPECT_TRUE(plain->params().empty());
  EXPECT_EQ(plain->inputs().size(), 5u);
  auto noArg = importFxText(body + "Graph signature: \n    # inputs\n    p_other: PARAMETER target='other'\n", "ep.py");
  ASSERT_FALSE(noArg.ok());
  EXPECT_EQ(noArg.error().str(), "ep.py:12: the graph signature names input 'p_other', which forward does not take");
  auto noOut = importFxText(body + "Graph signature: \n    # outputs\n    loss: LOSS_OUTPUT\n", "ep.py");
  ASSERT_FALSE(noOut.ok());
  EXPECT_EQ(noOut.error().str(), "ep.py:12: the graph signature names output 'loss' (LOSS_OUTPUT), which forward does not return");
  auto garbled = importFxText(body + "Graph signature: \n    # inputs\n    p_linear_weight PARAMETER\n", "ep.py");
  ASSERT_FALSE(garbled.ok());
  EXPECT_EQ(garbled.error().str(),
            "ep.py:12: graph signature: expected '# inputs', '# outputs' or 'name: KIND', got 'p_linear_weight PARAMETER'");
}

// Nesting deeper than the parser's limit (brackets, calls, subscripts) is a
// syntax error at the token, not a stack overflow.
TEST(FxParse, DeepNestingIsAnError) {
  auto capture = [](const std::string& expr) {
    return "def forward(self, x: \"f32[2]\"):\n    y: \"f32[2]\" = " + expr + "\n    return [y]\n";
  };
  for (const std::string& expr : {std::string(50000, '[') + std::string(50000, ']'),
                                  "torch.ops.aten.neg.default(" + std::string(50000, '(') + "x" +
                                      std::string(50000, ')') + ")",
                                  "x" + std::string(50000, '[') + "0" + std::string(50000, ']'),
                                  [] {
                                    std::string s = "x";
                                    for (int i = 0; i < 50000; ++i) s += "[0]";
                                    return s;
                                  }()}) {
    auto g = importFxText(capture(expr), "deep.py");
    ASSERT_FALSE(g.ok());
    EXPECT_EQ(g.error().id, "fx-syntax");
    EXPECT_EQ(g.error().location.rfind("deep.py:2:", 0), 0u) << g.error().str();
    EXPECT_NE(g.error().message.find("nested deeper than 200 levels"), std::string::npos) << g.error().str();
  }
  // Within the limit, nesting parses.
  auto ok = importFxText(capture("torch.ops.aten.neg.default(" + std::string(100, '(') + "x" +
                                 std::string(100, ')') + ")"),
                         "shallow.py");
  EXPECT_TRUE(ok.ok()) << ok.error().str();
}

// ------------------------------------------------------------------ diagnostics

TEST(FxErrors, UnsupportedOpNamesOpAndLine) {
  std::string text =
      "def forward(self, x: \"f32[2]\"):\n"
      "    y: \"f32[2]\" = torch.ops.aten.neg.default(x)\n"
      "    z: \"f32[2]\" = torch.ops.aten.digamma.default(y)\n"
      "    return [z]\n";
  auto g = importFxText(text, "u.py");
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.error().id, "fx-unsupported-op");
  EXPECT_EQ(g.error().str().rfind("u.py:3: unsupported op aten.digamma.default (node 'z'): the importer has no "
                                  "mapping and no decomposition file declares it",
                                  0),
            0u)
      << g.error().str();
  EXPECT_NE(g.error().message.find("--decomp"), std::string::npos);
}

TEST(FxErrors, DeclaredTypeMismatchPointsAtCaptureLine) {
  std::string text =
      "def forward(self, a: \"f32[2, 3]\", b: \"f32[3, 4]\"):\n"
      "    # File: /src/m.py:7 in f, code: c = a @ b\n"
      "    mm: \"f32[2, 5]\" = torch.ops.aten.mm.default(a, b)\n"
      "    return [mm]\n";
  auto g = importFxText(text, "t.py");
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.error().id, "type-mismatch");
  EXPECT_EQ(g.error().location, "t.py:3");
  EXPECT_NE(g.error().message.find("declared f32[2, 5]"), std::string::npos) << g.error().message;
}

TEST(FxErrors, PromotionMismatchAndUndefinedValue) {
  std::string text =
      "def forward(self, a: \"f32[2]\", b: \"i64[2]\"):\n"
      "    mul: \"i64[2]\" = torch.ops.aten.mul.Tensor(a, b)\n"
      "    return [mul]\n";
  auto g = importFxText(text, "p.py");
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.error().str(),
            "p.py:2: aten.mul.Tensor 'mul': operands promote to f32 but the result is declared i64");
  std::string text2 =
      "def forward(self, a: \"f32[2]\"):\n"
      "    neg: \"f32[2]\" = torch.ops.aten.neg.default(q)\n"
      "    return [neg]\n";
  auto h = importFxText(text2, "q.py");
  ASSERT_FALSE(h.ok());
  EXPECT_EQ(h.error().str(), "q.py:2: aten.neg.default 'neg': value 'q' is not defined");
}

TEST(FxErrors, UnsupportedCollectiveReduceAndMaskIndexing) {
  std::string text =
      "def forward(self, a: \"f32[2]\", m: \"b8[2]\"):\n"
      "    all_reduce: \"f32[2]\" = torch.ops._c10d_functional.all_reduce.default(a, 'product', '0')\n"
      "    return [all_reduce]\n";
  auto g = importFxText(text, "c.py");
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.error().str(), "c.py:2: _c10d_functional.all_reduce.default 'all_reduce': reduce op "
                             "'product' is not supported (sum, avg, max, min)");
  std::string text2 =
      "def forward(self, a: \"f32[2]\", m: \"b8[2]\"):\n"
      "    index: \"f32[1]\" = torch.ops.aten.index.Tensor(a, [m])\n"
      "    return [index]\n";
  auto h = importFxText(text2, "i.py");
  ASSERT_FALSE(h.ok());
  EXPECT_EQ(h.error().id, "fx-unsupported");
  EXPECT_EQ(h.error().location, "i.py:2");
}

// Found by fuzz/fx_fuzz.cpp: a tuple index past the op's results was an
// internal assertion (abort); it is the capture's error, at the getitem line.
TEST(FxErrors, TupleIndexPastTheResultsIsAnError) {
  std::string text =
      "def forward(self, x: \"f32[2, 6]\", w: \"f32[6]\", b: \"f32[6]\"):\n"
      "    native_layer_norm = torch.ops.aten.native_layer_norm.default(x, [6], w, b, 1e-05)\n"
      "    getitem: \"f32[2, 6]\" = native_layer_norm[0]\n"
      "    getitem_5: \"f32[2, 1]\" = native_layer_norm[3];  native_layer_norm = None\n"
      "    return (getitem, getitem_5)\n";
  auto g = importFxText(text, "t.py");
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.error().str(), "t.py:4: 'getitem_5' reads result 3 of aten.native_layer_norm.default, which has no "
                             "such result");
}

TEST(FxErrors, RankFileOrder) {
  auto p = importFxProgram({kData + "mlp_tp.r1.py", kData + "mlp_tp.r0.py"});
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.error().id, "fx-rank-order");
}

}  // namespace
}  // namespace sp::frontend

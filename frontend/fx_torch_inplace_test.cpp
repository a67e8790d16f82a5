// In-place forms of torch-level graphs (fx_mutation.h): each in-place
// method, function and augmented assignment imports as its out-of-place
// form, and later reads of the mutated name (and its exact aliases) see the
// new value; mutations the import cannot model (through views still read,
// of graph inputs) are errors naming the node.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "frontend/fx_import.h"
#include "frontend/fx_parser.h"
#include "frontend/fx_test_util.h"
#include "ir/interpreter.h"

namespace sp::frontend {

namespace {

using ir::DType;
using ir::Tensor;
using fx_test::noise;
using fx_test::typed;
using fx_test::values;

struct InPlaceRow {
  const char* stmt;  // mutates `c` (a clone of x): `r = c.add_(y)` or `c += y;  r = c`
  const char* want;  // the out-of-place torch-level expression over x
  const char* type;  // of r (and x)
};

const std::vector<InPlaceRow> kRows = {
    {"r = c.add_(y)", "x.add(y)", "f32[2, 3, 4]"},
    {"r = c.add_(y, alpha = 2)", "torch.add(x, y, alpha = 2)", "f32[2, 3, 4]"},
    {"r = c.sub_(w)", "x - w", "f32[2, 3, 4]"},
    {"r = c.mul_(0.5)", "x * 0.5", "f32[2, 3, 4]"},
    {"r = c.div_(p)", "x / p", "f32[2, 3, 4]"},
    {"r = c.div_(2.0, rounding_mode = 'floor')", "torch.div(x, 2.0, rounding_mode = 'floor')", "f32[2, 3, 4]"},
    {"r = c.pow_(2)", "x ** 2", "f32[2, 3, 4]"},
    {"r = c.masked_fill_(m, -1.0)", "x.masked_fill(m, -1.0)", "f32[2, 3, 4]"},
    {"r = c.clamp_(min = -0.5, max = 0.5)", "torch.clamp(x, -0.5, 0.5)", "f32[2, 3, 4]"},
    {"r = c.clamp_min_(0.1)", "x.clamp_min(0.1)", "f32[2, 3, 4]"},
    {"r = c.exp_()", "torch.exp(x)", "f32[2, 3, 4]"},
    {"r = c.neg_()", "-x", "f32[2, 3, 4]"},
    {"r = c.sigmoid_()", "x.sigmoid()", "f32[2, 3, 4]"},
    {"r = c.tril_()", "torch.tril(x)", "f32[2, 3, 4]"},
    {"r = c.cumsum_(1)", "torch.cumsum(x, 1)", "f32[2, 3, 4]"},
    {"r = torch.relu_(c)", "torch.relu(x)", "f32[2, 3, 4]"},
    {"r = c.zero_()", "torch.zeros_like(x)", "f32[2, 3, 4]"},
    {"r = torch.zero_(c)", "torch.zeros_like(x)", "f32[2, 3, 4]"},
    {"r = c.fill_(3.0)", "torch.full_like(x, 3.0)", "f32[2, 3, 4]"},
    {"r = torch.fill_(c, 2)", "torch.full_like(x, 2)", "f32[2, 3, 4]"},
    {"r = c.copy_(y)", "y.clone()", "f32[2, 3, 4]"},
    {"r = c.copy_(s)", "s.expand(2, 3, 4)", "f32[2, 3, 4]"},
    {"r = c.index_add_(2, i, s2)", "torch.index_add(x, 2, i, s2)", "f32[2, 3, 4]"},
    {"r = torch.nn.functional.relu(c, inplace = True)", "torch.relu(x)", "f32[2, 3, 4]"},
    {"r = torch.nn.functional.silu(c, True)", "torch.nn.functional.silu(x)", "f32[2, 3, 4]"},
    {"r = torch.nn.functional.dropout(c, 0.1, False, True)", "x.clone()", "f32[2, 3, 4]"},
    {"c += y;  r = c", "x + y", "f32[2, 3, 4]"},
    {"c -= 1.5;  r = c", "x - 1.5", "f32[2, 3, 4]"},
    {"c *= y;  r = c", "x * y", "f32[2, 3, 4]"},
    {"c /= p;  r = c", "x / p", "f32[2, 3, 4]"},
    {"c //= 0.5;  r = c", "x // 0.5", "f32[2, 3, 4]"},
    {"c **= 3;  r = c", "x ** 3", "f32[2, 3, 4]"},
    {"c[m] = -1.0;  r = c", "x.masked_fill(m, -1.0)", "f32[2, 3, 4]"},
};

const char* kInputs[][2] = {{"x", "f32[2, 3, 4]"}, {"y", "f32[2, 3, 4]"}, {"p", "f32[2, 3, 4]"},
                            {"w", "f32[3, 4]"},    {"m", "b8[2, 3, 4]"},  {"s", "f32[2, 1, 4]"},
                            {"i", "i64[2]"},       {"s2", "f32[2, 3, 2]"}, {"k", "f32[4, 3]"}};

std::string header() { return fx_test::dynamoHeader(kInputs); }

ir::TensorMap inputs() {
  ir::TensorMap in;
  uint32_t seed = 7;
  for (const auto& [n, t] : kInputs) {
    auto tt = fx::parseTensorAnnotation(t);
    std::vector<int64_t> dims;
    int64_t count = 1;
    for (const auto& d : tt->shape) {
      dims.push_back(d.value());
      count *= d.value();
    }
    auto v = noise(size_t(count), seed++);
    for (auto& x : v) {
      if (std::string(n) == "p") x = std::exp(x);
      else if (tt->dtype == DType::I64) x = x > 0 ? 3 : 1;  // repeats allowed
      else if (tt->dtype == DType::Bool) x = x > 0;
    }
    in["L_" + std::string(n) + "_"] = typed(tt->dtype, dims, v);
  }
  return in;
}

// `r = c.add_(y)` -> `r<k>: "t" = c<k>.add_(y)`; `c += y;  r = c` likewise.
std::string rowStmt(const InPlaceRow& row, size_t k) {
  std::string s = row.stmt, out, id = std::to_string(k);
  for (size_t at = 0; at < s.size(); ++at) {
    bool word = (at == 0 || !std::isalnum(static_cast<unsigned char>(s[at - 1]))) &&
                (at + 1 == s.size() || !std::isalnum(static_cast<unsigned char>(s[at + 1])) || s[at + 1] == '_');
    if (word && (s[at] == 'c' || s[at] == 'r') && (at + 1 == s.size() || s[at + 1] != '_')) {
      out += s[at] + id;
      if (s[at] == 'r') out += std::string(": \"") + row.type + "\"";
      continue;
    }
    out += s[at];
  }
  return out;
}

Result<ir::Graph> importBody(const std::string& body, const std::string& name = "inplace.py") {
  return importFxText(header() + body, name);
}

}  // namespace

std::string inPlaceRowsText() {
  std::string all;
  for (size_t k = 0; k < kRows.size(); ++k) all += rowStmt(kRows[k], k) + "\n";
  return all;
}

namespace {

// Each row: the in-place result, and a later read of the mutated name,
// equal the out-of-place form.
TEST(FxTorchInPlace, EachFormIsItsOutOfPlaceEntry) {
  std::string body, ret;
  for (size_t k = 0; k < kRows.size(); ++k) {
    std::string id = std::to_string(k), t = kRows[k].type;
    body += "         # File: /work/model/m.py:" + std::to_string(10 + k) + " in forward, code: " + kRows[k].stmt + "\n";
    body += "        c" + id + ": \"" + t + "\" = x.clone()\n";
    body += "        " + rowStmt(kRows[k], k) + "\n";
    body += "        u" + id + ": \"" + t + "\" = c" + id + " + 0.0;  c" + id + " = None\n";
    body += "        a" + id + ": \"" + t + "\" = " + kRows[k].want + "\n";
    ret += "r" + id + ", u" + id + ", a" + id + ", ";
  }
  body += "        return (" + ret + ")\n";
  auto g = importBody(body);
  ASSERT_TRUE(g.ok()) << g.error().str() << "\n" << body;
  auto out = ir::runGraph(*g, inputs());
  ASSERT_TRUE(out.ok()) << out.error().str();
  for (size_t k = 0; k < kRows.size(); ++k) {
    std::string id = std::to_string(k);
    auto want = values(out->at("a" + id));
    fx_test::expectNear(values(out->at("r" + id)), want, 1e-5, kRows[k].stmt);
    fx_test::expectNear(values(out->at("u" + id)), want, 1e-5, std::string(kRows[k].stmt) + " (later read)");
  }
}

// A mutation rebinds the name and every exact alias of it; chained
// mutations compose; `x /= y` without the binding FX prints after it too.
TEST(FxTorchInPlace, ChainsAndAliasesSeeTheNewValue) {
  auto g = importBody(R"FX(
        c: "f32[2, 3, 4]" = x.clone()
        d = c
        a1: "f32[2, 3, 4]" = c.mul_(2)
        a2: "f32[2, 3, 4]" = a1.add_(1)
        u: "f32[2, 3, 4]" = d * 1.0
        c /= 2.0
        v: "f32[2, 3, 4]" = a1 + 0.0
        return (u, v, c)
)FX");
  ASSERT_TRUE(g.ok()) << g.error().str();
  auto in = inputs();
  auto out = ir::runGraph(*g, in);
  ASSERT_TRUE(out.ok()) << out.error().str();
  auto x = values(in.at("L_x_"));
  std::vector<double> u, v;
  for (double e : x) {
    u.push_back(2 * e + 1);
    v.push_back((2 * e + 1) / 2);
  }
  fx_test::expectNear(values(out->at("u")), u, 1e-6, "u = 2x + 1");
  fx_test::expectNear(values(out->at("v")), v, 1e-6, "v = (2x + 1) / 2");
  // the returned `c` is the last value, under a fresh name (its first value holds `c`)
  ASSERT_EQ(g->outputs().size(), 3u);
  fx_test::expectNear(values(out->at(g->value(g->outputs()[2]).name)), v, 1e-6, "returned c");
}

// FX prints an operator.i<op> node as the augmented assignment and then
// the node bound to the operand: one statement, the node.
TEST(FxTorchInPlace, AugmentedAssignmentsParseAsTheirNode) {
  auto m = fx::parseModule("def forward(self, a: \"f32[2]\"):\n"
                           "    a += 1;  iadd: \"f32[2]\" = a;  a = None\n"
                           "    b //= a @ c  # File: x.py:3\n"
                           "    c **= 2;  d = e\n"
                           "    return iadd\n",
                           "p.py");
  ASSERT_TRUE(m.ok()) << m.error().str();
  ASSERT_EQ(m->body.size(), 6u);
  EXPECT_EQ(m->body[0].target, "iadd");
  EXPECT_EQ(m->body[0].annotation.value_or(""), "f32[2]");
  EXPECT_EQ(m->body[0].value.str(), "operator.iadd(a, 1)");
  EXPECT_EQ(m->body[1].target, "a");  // the `a = None` trailer
  EXPECT_EQ(m->body[2].target, "b");
  EXPECT_EQ(m->body[2].value.str(), "operator.ifloordiv(b, operator.matmul(a, c))");
  EXPECT_EQ(m->body[3].target, "c");  // `d = e` binds another value: not the node
  EXPECT_EQ(m->body[3].value.str(), "operator.ipow(c, 2)");
  EXPECT_EQ(m->body[4].target, "d");
}

// FX prints an operator.setitem node as the subscript assignment and then
// the node bound to the operand: one statement, the node; without the
// binding, a statement on the operand.
TEST(FxTorchSetItem, SubscriptAssignmentsParseAsTheirNode) {
  auto m = fx::parseModule("def forward(self, a: \"f32[2, 3]\"):\n"
                           "    a[(slice(None, None, None), 0)] = 1.0;  setitem = a;  a = None\n"
                           "    b[m] = -inf\n"
                           "    c[0] = d;  setitem_1: \"f32[3]\" = c\n"
                           "    return setitem\n",
                           "p.py");
  ASSERT_TRUE(m.ok()) << m.error().str();
  ASSERT_EQ(m->body.size(), 5u);
  EXPECT_EQ(m->body[0].target, "setitem");
  EXPECT_FALSE(m->body[0].annotation.has_value());
  EXPECT_EQ(m->body[0].value.str(), "operator.setitem(a, (slice(None, None, None), 0), 1)");
  EXPECT_EQ(m->body[1].target, "a");  // the `a = None` trailer
  EXPECT_EQ(m->body[2].target, "b");
  EXPECT_EQ(m->body[2].value.str(), "operator.setitem(b, m, -inf)");
  EXPECT_EQ(m->body[3].target, "setitem_1");
  EXPECT_EQ(m->body[3].annotation.value_or(""), "f32[3]");
  EXPECT_EQ(m->body[3].value.str(), "operator.setitem(c, 0, d)");
  // FX prints `x[i] += v` as getitem, iadd and setitem nodes, never so
  auto bad = fx::parseModule("def forward(self, a: \"f32[2]\"):\n    a[0] += 1.0\n    return a\n", "p.py");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().id, "fx-syntax");
  EXPECT_EQ(bad.error().message, "expected '=' after 'a[0]' (subscript assignment), got '+'");
  EXPECT_EQ(bad.error().location, "p.py:2:10");
}

// print(gm.graph) types no node: a clear error pointing at the typed forms.
TEST(FxTorchInPlace, GraphPrintFormIsUntyped) {
  for (const char* text : {
           "graph():\n"
           "    %l_x_ : torch.Tensor [num_users=1] = placeholder[target=L_x_]\n"
           "    %add : [num_users=1] = call_function[target=operator.add](args = (%l_x_, 1), kwargs = {})\n"
           "    return (add,)\n",
           "[rank0]: some log line\ngraph():\n"
           "    %arg0_1 : [num_users=1] = placeholder[target=arg0_1]\n"
           "    %add : [num_users=1] = call_function[target=torch.ops.aten.add.Tensor](args = (%arg0_1, %arg0_1), "
           "kwargs = {})\n    return (add,)\n"}) {
    auto g = importFxText(text, "graph.txt");
    ASSERT_FALSE(g.ok());
    EXPECT_EQ(g.error().id, "fx-untyped") << g.error().str();
    EXPECT_NE(g.error().message.find("print(gm.graph)"), std::string::npos) << g.error().str();
    EXPECT_NE(g.error().message.find("print_readable"), std::string::npos) << g.error().str();
    EXPECT_EQ(g.error().location.rfind("graph.txt:", 0), 0u) << g.error().str();
  }
}

// Qwen2 MoE's router: top-k of the softmax, renormalized in place
// (`routing_weights /= routing_weights.sum(dim=-1, keepdim=True)`), as
// Dynamo prints it.
TEST(FxTorchInPlace, Qwen2MoeRouterNormalization) {
  auto g = importFxText(R"FX(
class GraphModule(torch.nn.Module):
    def forward(self, L_hidden_states_: "f32[6, 8]", L_self_modules_gate_parameters_weight_: "f32[4, 8]"):
        l_hidden_states_ = L_hidden_states_
        l_self_modules_gate_parameters_weight_ = L_self_modules_gate_parameters_weight_
        
         # File: /hf/modeling_qwen2_moe.py:610 in forward, code: router_logits = self.gate(hidden_states)
        router_logits: "f32[6, 4]" = torch._C._nn.linear(l_hidden_states_, l_self_modules_gate_parameters_weight_, None);  l_hidden_states_ = l_self_modules_gate_parameters_weight_ = None
        
         # File: /hf/modeling_qwen2_moe.py:612 in forward, code: routing_weights = F.softmax(router_logits, dim=1, dtype=torch.float)
        routing_weights: "f32[6, 4]" = torch.nn.functional.softmax(router_logits, dim = 1, dtype = torch.float32)
        
         # File: /hf/modeling_qwen2_moe.py:613 in forward, code: routing_weights, selected_experts = torch.topk(routing_weights, self.top_k, dim=-1)
        topk = torch.topk(routing_weights, 2, dim = -1);  routing_weights = None
        routing_weights_1: "f32[6, 2]" = topk[0]
        selected_experts: "i64[6, 2]" = topk[1];  topk = None
        
         # File: /hf/modeling_qwen2_moe.py:615 in forward, code: routing_weights /= routing_weights.sum(dim=-1, keepdim=True)
        sum_1: "f32[6, 1]" = routing_weights_1.sum(dim = -1, keepdim = True)
        routing_weights_1 /= sum_1;  itruediv: "f32[6, 2]" = routing_weights_1;  routing_weights_1 = sum_1 = None
        
         # File: /hf/modeling_qwen2_moe.py:617 in forward, code: routing_weights = routing_weights.to(hidden_states.dtype)
        routing_weights_2: "f32[6, 2]" = itruediv.to(torch.float32);  itruediv = None
        return (routing_weights_2, selected_experts, router_logits)
)FX",
                        "qwen2_moe.py");
  ASSERT_TRUE(g.ok()) << g.error().str();
  ir::TensorMap in{{"L_hidden_states_", typed(DType::F32, {6, 8}, noise(48, 3))},
                   {"L_self_modules_gate_parameters_weight_", typed(DType::F32, {4, 8}, noise(32, 4))}};
  auto out = ir::runGraph(*g, in);
  ASSERT_TRUE(out.ok()) << out.error().str();
  auto logits = values(out->at("router_logits"));
  auto w = values(out->at("routing_weights_2"));
  auto sel = values(out->at("selected_experts"));
  for (int r = 0; r < 6; ++r) {
    // the top-2 softmax weights renormalized: e^l_a / (e^l_a + e^l_b)
    double la = logits[size_t(r * 4) + size_t(sel[size_t(r * 2)])];
    double lb = logits[size_t(r * 4) + size_t(sel[size_t(r * 2 + 1)])];
    EXPECT_NEAR(w[size_t(r * 2)], std::exp(la) / (std::exp(la) + std::exp(lb)), 1e-5) << r;
    EXPECT_NEAR(w[size_t(r * 2)] + w[size_t(r * 2 + 1)], 1.0, 1e-5) << r;
  }
}

// A view whose base is not read again: the mutation is the view's value.
TEST(FxTorchInPlace, ViewOfADeadBaseMayBeMutated) {
  auto g = importBody(R"FX(
        c: "f32[2, 3, 4]" = x.clone()
        v: "f32[6, 4]" = c.view(6, 4);  c = None
        a: "f32[6, 4]" = v.mul_(3)
        t: "f32[4, 6]" = a.t()
        return (t,)
)FX");
  ASSERT_TRUE(g.ok()) << g.error().str();
  auto in = inputs();
  auto out = ir::runGraph(*g, in);
  ASSERT_TRUE(out.ok()) << out.error().str();
  auto x = values(in.at("L_x_"));
  auto t = values(out->at("t"));
  for (int r = 0; r < 6; ++r)
    for (int col = 0; col < 4; ++col) EXPECT_NEAR(t[size_t(col * 6 + r)], 3 * x[size_t(r * 4 + col)], 1e-6);
}

// Topk's values and indices are separate tensors: mutating one while the
// other is read is exact.
TEST(FxTorchInPlace, TupleResultsThatAreNotViewsAreIndependent) {
  auto g = importBody(R"FX(
        topk = torch.topk(x, 2)
        values: "f32[2, 3, 2]" = topk[0]
        indices: "i64[2, 3, 2]" = topk[1];  topk = None
        a: "f32[2, 3, 2]" = values.mul_(2)
        return (a, indices)
)FX");
  ASSERT_TRUE(g.ok()) << g.error().str();
}

// tests/fixtures/capture_dynamo_inplace (make.py there): a TP 2 MLP with a
// Qwen2-MoE router written with einsum, relu_, `h *= 0.5`, `y += bias` after
// the all_reduce and the router's `routing_weights /= ...`, run on the CPU
// executor against the sequential graph on sharded inputs; the twin without
// the all_reduce adds the bias in place to partial sums, and differs.
// (`shardproof verify --infer-relations` verifies the pair and refutes the
// twin at moe.py:15.)
TEST(FxTorchInPlace, TensorParallelFixtureMatchesTheSequentialGraph) {
  const std::string dir = SP_SOURCE_DIR "/tests/fixtures/capture_dynamo_inplace/";
  auto seq = importFxGraph(dir + "moe_tp2/seq.py");
  ASSERT_TRUE(seq.ok()) << seq.error().str();
  ir::TensorMap in{{"L_x_", typed(DType::F32, {2, 4, 16}, noise(128, 21))},
                   {"L_self_modules_fc1_parameters_weight_", typed(DType::F32, {32, 16}, noise(512, 22))},
                   {"L_self_modules_fc2_parameters_weight_", typed(DType::F32, {16, 32}, noise(512, 23))},
                   {"L_self_modules_fc2_parameters_bias_", typed(DType::F32, {16}, noise(16, 24))},
                   {"L_self_modules_gate_parameters_weight_", typed(DType::F32, {4, 16}, noise(64, 25))}};
  auto want = ir::runGraph(*seq, in);
  ASSERT_TRUE(want.ok()) << want.error().str();
  // rank r: rows r*16.. of fc1's weight, columns r*16.. of fc2's
  std::vector<ir::TensorMap> ranks = fx_test::mlpTp2Inputs(in);
  for (const char* c : {"moe_tp2", "moe_tp2_twin"}) {
    SCOPED_TRACE(c);
    auto got = fx_test::runTp2Capture(dir, c, "moe", ranks);
    ASSERT_TRUE(got.ok()) << got.error().str();
    double err = 0;
    for (const char* out : {"iadd", "itruediv"}) {
      auto a = values(got->at(0).at(out)), b = values(want->at(out));
      ASSERT_EQ(a.size(), b.size());
      for (size_t k = 0; k < a.size(); ++k) err = std::max(err, std::abs(a[k] - b[k]));
    }
    if (std::string(c) == "moe_tp2") EXPECT_LT(err, 1e-5);
    else EXPECT_GT(err, 1e-2);  // the partial sums
  }
}

// Regression: a view read only through a method call (`v.mul(2)`, whose
// callee is "v.mul") after its base was mutated was not seen as read, and
// the import gave it the base's old value (torch: the new one).
TEST(FxTorchInPlace, MethodCallReceiversAreReads) {
  auto g = importBody("        c: \"f32[2, 3, 4]\" = x.clone()\n        v: \"f32[24]\" = c.view(24)\n"
                      "        a: \"f32[2, 3, 4]\" = c.add_(1)\n        u: \"f32[24]\" = v.mul(2)\n"
                      "        return (a, u)\n",
                      "bad.py");
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.error().str(),
            "bad.py:14: node 'a' mutates 'c' in place while 'v', which may share its storage (a view of it, or the "
            "value it views), is still read: mutation through views is not supported");
  // the base read through a method after its view is mutated
  g = importBody("        c: \"f32[2, 3, 4]\" = x.clone()\n        v: \"f32[24]\" = c.view(24)\n"
                 "        a: \"f32[24]\" = v.add_(1)\n        s: \"f32[]\" = c.sum()\n        return (a, s)\n",
                 "bad.py");
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.error().message.find("node 'a' mutates 'v' in place while 'c'"), std::string::npos) << g.error().str();
}

Error importError(const std::string& body) {
  auto g = importBody(body, "bad.py");
  EXPECT_FALSE(g.ok()) << body;
  return g.ok() ? Error{} : g.error();
}

// Mutations the import cannot represent are errors naming the node, the
// value and the reason, at the capture line.
TEST(FxTorchInPlace, UnrepresentableMutationsAreRejected) {
  struct Case {
    const char* body;
    const char* id;
    std::vector<const char*> text;
    int line;
  };
  const Case cases[] = {
      // a graph input, directly, through its alias line, through a view
      {"        a: \"f32[2, 3, 4]\" = L_x_.add_(1)\n        return (a,)\n", "fx-unsupported",
       {"node 'a'", "'L_x_'", "graph input"}, 12},
      {"        x /= 2.0;  itruediv: \"f32[2, 3, 4]\" = x\n        return (itruediv,)\n", "fx-unsupported",
       {"node 'itruediv'", "'x'", "graph input"}, 12},
      {"        v: \"f32[24]\" = x.view(24)\n        a: \"f32[24]\" = v.zero_()\n        return (a,)\n",
       "fx-unsupported", {"node 'a'", "'v'", "graph input"}, 13},
      // a view read after its base is mutated
      {"        c: \"f32[2, 3, 4]\" = x.clone()\n        v: \"f32[6, 4]\" = c.view(6, 4)\n"
       "        a: \"f32[2, 3, 4]\" = c.add_(1)\n        u: \"f32[6, 4]\" = v * 2\n        return (a, u)\n",
       "fx-unsupported", {"node 'a'", "'c'", "'v'", "views"}, 14},
      // a base read after its view is mutated (a subscript is a view)
      {"        c: \"f32[2, 3, 4]\" = x.clone()\n        v: \"f32[3, 4]\" = c[0]\n"
       "        a: \"f32[3, 4]\" = v.mul_(2)\n        return (a, c)\n",
       "fx-unsupported", {"node 'a'", "'v'", "'c'"}, 14},
      // the pieces of a split share storage
      {"        c: \"f32[2, 3, 4]\" = x.clone()\n        split = c.split(2, -1)\n"
       "        g0: \"f32[2, 3, 2]\" = split[0]\n        g1: \"f32[2, 3, 2]\" = split[1];  split = None\n"
       "        a: \"f32[2, 3, 2]\" = g0.add_(1)\n        return (a, g1)\n",
       "fx-unsupported", {"node 'a'", "'g0'", "'g1'"}, 16},
      // einsum of one operand may return it permuted (a view)
      {"        c: \"f32[2, 3, 4]\" = x.clone()\n        t: \"f32[4, 3, 2]\" = torch.einsum('ijk->kji', c)\n"
       "        a: \"f32[4, 3, 2]\" = t.mul_(2)\n        return (a, c)\n",
       "fx-unsupported", {"node 'a'", "'t'", "'c'"}, 14},
      // contiguous may return its input (a view) or a copy: not modeled
      {"        c: \"f32[2, 3, 4]\" = x.clone()\n        t: \"f32[2, 4, 3]\" = c.transpose(1, 2)\n"
       "        k: \"f32[2, 4, 3]\" = t.contiguous()\n        a: \"f32[2, 4, 3]\" = k.add_(1)\n        return (a, t)\n",
       "fx-unsupported", {"node 'a'", "'k'", "'t'"}, 15},
      // in-place view ops change the operand's metadata
      {"        c: \"f32[3, 4]\" = w.clone()\n        a: \"f32[4, 3]\" = c.t_()\n        return (a,)\n",
       "fx-unsupported", {"node 'a'", "in-place view op", "'c'"}, 13},
      // `x @= y` falls back to `x = x @ y` in Python (no Tensor.__imatmul__): not an in-place form
      {"        c: \"f32[3, 4]\" = w.clone()\n        c @= k;  imatmul: \"f32[3, 3]\" = c\n        return (imatmul,)\n",
       "fx-unsupported-op", {"operator.imatmul", "node 'imatmul'"}, 13},
      // an in-place op keeps its operand's type
      {"        c: \"f32[2, 3, 4]\" = x.clone()\n        a: \"f32[4, 6]\" = c.add_(1)\n        return (a,)\n",
       "fx-type", {"node 'a'", "f32[4, 6]", "f32[2, 3, 4]"}, 13},
      // a broadcast that would grow the operand
      {"        c: \"f32[3, 4]\" = w.clone()\n        a: \"f32[3, 4]\" = c.add_(x)\n        return (a,)\n",
       "type-mismatch", {"'a'", "f32[3, 4]", "f32[2, 3, 4]"}, 13},
  };
  for (const auto& c : cases) {
    Error e = importError(c.body);
    EXPECT_EQ(e.id, c.id) << c.body << e.str();
    for (const char* t : c.text) EXPECT_NE(e.message.find(t), std::string::npos) << t << " in " << e.str();
    EXPECT_EQ(e.location, "bad.py:" + std::to_string(c.line)) << c.body << e.str();
  }
}


// ---- operands of another dtype ----

const char* kMixedInputs[][2] = {{"h", "f16[3]"},  {"f", "f32[3]"},  {"g", "f32[3]"},  {"b", "bf16[2]"},
                                 {"hf", "f16[2]"}, {"x32", "f32[1]"}, {"y64", "f64[1]"}, {"i32", "i32[2]"},
                                 {"i64", "i64[2]"}, {"f2", "f32[2]"}, {"m", "b8[2]"}};

Result<ir::Graph> importMixed(const std::string& body, const std::string& name = "mixed.py") {
  return importFxText(fx_test::dynamoHeader(kMixedInputs) + body, name);
}

// torch computes an in-place op in its operands' promoted dtype and casts
// the result back to the mutated tensor's dtype: f16(f32(h) + f), not h +
// f16(f). Expected values by hand from that rule (where computing in the
// narrower dtype would differ: 2048 + 1.00048828125 is 2050 in f16 only when
// added in f32; 1 + 2^-24 + 2^-50 rounds to 1 + 2^-23 in f32 only when added
// in f64).
TEST(FxTorchInPlace, MixedDtypesComputeInThePromotedDtypeAndCastBack) {
  auto g = importMixed(R"FX(        c: "f16[3]" = h.clone()
        c += f;  iadd: "f16[3]" = c
        d: "f16[3]" = h.clone()
        e: "f16[3]" = d.mul_(g)
        k: "bf16[2]" = b.clone()
        add_: "bf16[2]" = k.add_(hf);  add_ = None
        p: "f32[1]" = x32.clone()
        q: "f32[1]" = p.add_(y64)
        n: "i32[2]" = i32.clone()
        n += i64;  iadd_1: "i32[2]" = n
        t: "i64[2]" = i64.clone()
        div_: "i64[2]" = t.div_(2, rounding_mode = 'floor');  div_ = None
        clamp_: "i64[2]" = t.clamp_(min = -2);  clamp_ = None
        w: "f16[3]" = h.clone()
        w *= 0.5;  imul: "f16[3]" = w
        return (iadd, e, k, q, iadd_1, t, imul)
)FX");
  ASSERT_TRUE(g.ok()) << g.error().str();
  ir::TensorMap in{{"L_h_", typed(DType::F16, {3}, {1.0, 2048.0, 3.0})},
                   {"L_f_", typed(DType::F32, {3}, {0.1, 1.00048828125, -0.5})},
                   {"L_g_", typed(DType::F32, {3}, {0.5, 0.25, 1.5})},
                   {"L_b_", typed(DType::BF16, {2}, {1.0, 256.0})},
                   {"L_hf_", typed(DType::F16, {2}, {0.005, 2.9})},
                   {"L_x32_", typed(DType::F32, {1}, {1.0})},
                   {"L_y64_", typed(DType::F64, {1}, {std::ldexp(1.0, -24) + std::ldexp(1.0, -50)})},
                   {"L_i32_", typed(DType::I32, {2}, {1, 2})},
                   {"L_i64_", typed(DType::I64, {2}, {3, -5})},
                   {"L_f2_", typed(DType::F32, {2}, {0.5, 0.5})},
                   {"L_m_", typed(DType::Bool, {2}, {1, 0})}};
  auto out = ir::runGraph(*g, in);
  ASSERT_TRUE(out.ok()) << out.error().str();
  auto got = [&](size_t k) {
    const auto& v = out->at(g->value(g->outputs()[k]).name);
    return std::make_pair(v.dtype(), values(v));
  };
  EXPECT_EQ(got(0), std::make_pair(DType::F16, std::vector<double>{1.099609375, 2050.0, 2.5}));
  EXPECT_EQ(got(1), std::make_pair(DType::F16, std::vector<double>{0.5, 512.0, 4.5}));
  EXPECT_EQ(got(2), std::make_pair(DType::BF16, std::vector<double>{1.0078125, 258.0}));
  EXPECT_EQ(got(3), std::make_pair(DType::F32, std::vector<double>{1.0 + std::ldexp(1.0, -23)}));
  EXPECT_EQ(got(4), std::make_pair(DType::I32, std::vector<double>{4, -3}));
  EXPECT_EQ(got(5), std::make_pair(DType::I64, std::vector<double>{1, -2}));
  EXPECT_EQ(got(6), std::make_pair(DType::F16, std::vector<double>{0.5, 1024.0, 1.5}));
}

// Where the promoted dtype cannot be cast back (a float result into an
// integer tensor, anything but bool into bool), torch raises an error: so
// does the import (fx-type), with torch's reason, at the capture line.
TEST(FxTorchInPlace, MixedDtypesTorchCannotCastBackAreTypeErrors) {
  struct Case {
    const char* stmt;
    const char* message;
  };
  const Case cases[] = {
      {"ci += f2;  iadd: \"i64[2]\" = ci",
       "node 'iadd' (operator.iadd) computes in f32 (its operands' promoted dtype) but is in place on 'ci' of dtype "
       "i64, which torch cannot cast it back to (it raises 'result type Float can't be cast to the desired output "
       "type Long')"},
      {"ci *= 2.5;  imul: \"i64[2]\" = ci",
       "node 'imul' (operator.imul) computes in f32 (its operands' promoted dtype) but is in place on 'ci' of dtype "
       "i64, which torch cannot cast it back to (it raises 'result type Float can't be cast to the desired output "
       "type Long')"},
      {"ci /= 2;  itruediv: \"i64[2]\" = ci", "node 'itruediv' (operator.itruediv) computes in f32"},
      {"r: \"i64[2]\" = ci.div_(ci)", "node 'r' (ci.div_) computes in f32"},
      {"r: \"i64[2]\" = ci.exp_()", "node 'r' (ci.exp_) computes in f32"},
      {"r: \"i64[2]\" = ci.clamp_(min = 0.5)", "node 'r' (ci.clamp_) computes in f32"},
      // (out of place too) torch rejects a float alpha for integer operands
      {"r: \"i64[2]\" = ci.add_(ci, alpha = 2.0)",
       "alpha 2.0 is a floating point number but the operands are i64: torch raises an error (for integral input "
       "tensors, argument alpha must not be a floating point number)"},
      {"cj: \"i32[2]\" = i32.clone()\n        cj += hf;  iadd: \"i32[2]\" = cj",
       "'cj' of dtype i32, which torch cannot cast it back to (it raises 'result type Half can't be cast to the "
       "desired output type Int')"},
      {"cb: \"b8[2]\" = m.clone()\n        cb += 1;  iadd: \"b8[2]\" = cb",
       "'cb' of dtype bool, which torch cannot cast it back to (it raises 'result type Long can't be cast to the "
       "desired output type Bool')"},
  };
  for (const auto& c : cases) {
    const std::string body = std::string("        ci: \"i64[2]\" = i64.clone()\n        ") + c.stmt + "\n        return (ci,)\n";
    auto g = importMixed(body, "bad.py");
    ASSERT_FALSE(g.ok()) << body;
    EXPECT_EQ(g.error().id, "fx-type") << body << g.error().str();
    EXPECT_NE(g.error().message.find(c.message), std::string::npos) << body << g.error().str();
    const int line = std::string(c.stmt).find('\n') == std::string::npos ? 15 : 16;
    EXPECT_EQ(g.error().location, "bad.py:" + std::to_string(line)) << body << g.error().str();
  }
}

// ---- subscript assignment (`x[i] = v`, operator.setitem) ----

// Small exact values, so that each expected result is written out by hand:
// x[i][k] = 4 i + k.
const char* kSetInputs[][2] = {{"x", "f32[3, 4]"}, {"y", "f32[4]"},    {"col", "f32[3]"}, {"m", "b8[3]"},
                               {"m2", "b8[3, 4]"}, {"m4", "b8[4]"},    {"idx", "i64[2]"}, {"j", "i64[2]"},
                               {"h", "f16[4]"},    {"t", "i64[4]"},    {"tm", "b8[4]"},   {"w", "f32[3, 4]"},
                               {"v2", "f32[2, 1]"}, {"v3", "f32[3, 1]"}};

ir::TensorMap setInputs() {
  const std::vector<std::vector<double>> v = {
      {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11},
      {100, 101, 102, 103},
      {200, 201, 202},
      {1, 0, 1},
      {1, 0, 0, 1, 0, 1, 0, 0, 0, 0, 1, 1},
      {0, 1, 1, 0},
      {2, 0},
      {3, 0},
      {0.5, 1.5, 2.5, 3.5},
      {5, 12, 7, 20},
      {0, 1, 0, 1},
      {300, 301, 302, 303, 304, 305, 306, 307, 308, 309, 310, 311},
      {50, 60},
      {70, 80, 90}};
  ir::TensorMap in;
  for (size_t k = 0; k < v.size(); ++k) {
    auto t = fx::parseTensorAnnotation(kSetInputs[k][1]);
    std::vector<int64_t> dims;
    for (const auto& d : t->shape) dims.push_back(d.value());
    in["L_" + std::string(kSetInputs[k][0]) + "_"] = typed(t->dtype, dims, v[k]);
  }
  return in;
}

// The body's first line is line 17 (after the 14 alias lines).
Result<ir::Graph> importSetItem(const std::string& body, const std::string& name = "setitem.py") {
  return importFxText(fx_test::dynamoHeader(kSetInputs) + body, name);
}

// Output k of g run on setInputs() (outputs a mutation rebound may be renamed).
std::vector<double> outputValues(const ir::Graph& g, size_t k) {
  auto out = ir::runGraph(g, setInputs());
  EXPECT_TRUE(out.ok()) << (out.ok() ? "" : out.error().str());
  if (!out.ok() || k >= g.outputs().size()) return {};
  return values(out->at(g.value(g.outputs()[k]).name));
}

constexpr double kInf = std::numeric_limits<double>::infinity();

struct SetRow {
  const char* stmt;  // mutates `c`, a clone of x
  std::vector<double> want;  // c afterwards, as torch computes it
};

// Each index form: the value of c after the statement, and of the node FX
// binds to it, as torch computes them (expected values by hand).
TEST(FxTorchSetItem, EachIndexFormMatchesTorch) {
  const SetRow rows[] = {
      // ints select (negative from the end); the value broadcast, a number filled in
      {"c[0] = y", {100, 101, 102, 103, 4, 5, 6, 7, 8, 9, 10, 11}},
      {"c[-1] = 7", {0, 1, 2, 3, 4, 5, 6, 7, 7, 7, 7, 7}},
      // x[:, 1] = col; out[..., :2] = -1.0; rows 0::2, columns 1:3
      {"c[(slice(None, None, None), 1)] = col", {0, 200, 2, 3, 4, 201, 6, 7, 8, 202, 10, 11}},
      {"c[(Ellipsis, slice(None, 2, None))] = -1.0", {-1, -1, 2, 3, -1, -1, 6, 7, -1, -1, 10, 11}},
      {"c[(slice(0, None, 2), slice(1, 3, None))] = 9", {0, 9, 9, 3, 4, 5, 6, 7, 8, 9, 9, 11}},
      {"c[(slice(1, None, None), 3)] = -2.5", {0, 1, 2, 3, 4, 5, 6, -2.5, 8, 9, 10, -2.5}},
      // None unsqueezes the view written through; Ellipsis then None: all of c
      {"c[(None, 1)] = y", {0, 1, 2, 3, 100, 101, 102, 103, 8, 9, 10, 11}},
      {"c[(Ellipsis, None)] = 1.0", {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}},
      // the value cast to c's dtype (copy_ converts)
      {"c[1] = h", {0, 1, 2, 3, 0.5, 1.5, 2.5, 3.5, 8, 9, 10, 11}},
      // boolean masks over rows, elements, columns; the value broadcast to the selected rows
      {"c[m] = 0", {0, 0, 0, 0, 4, 5, 6, 7, 0, 0, 0, 0}},
      {"c[m] = y", {100, 101, 102, 103, 4, 5, 6, 7, 100, 101, 102, 103}},
      {"c[m2] = -inf", {-kInf, 1, 2, -kInf, 4, -kInf, 6, 7, 8, 9, -kInf, -kInf}},
      {"c[(slice(None, None, None), m4)] = 5.0", {0, 5, 5, 3, 4, 5, 5, 7, 8, 5, 5, 11}},
      // Megatron's output_parallel[input_mask, :] = 0.0; a mask within a slice
      {"c[(m, slice(None, None, None))] = 0.0", {0, 0, 0, 0, 4, 5, 6, 7, 0, 0, 0, 0}},
      {"c[(m, slice(2, None, None))] = 0.0", {0, 1, 0, 0, 4, 5, 6, 7, 8, 9, 0, 0}},
      // integer tensors: rows 2 and 0 (v2[0] into row 2), columns 3 and 0
      {"c[idx] = v2", {60, 60, 60, 60, 4, 5, 6, 7, 50, 50, 50, 50}},
      {"c[(slice(None, None, None), j)] = v3", {70, 1, 2, 70, 80, 5, 6, 80, 90, 9, 10, 90}},
      // lists of ints, as the integer tensor of their entries
      {"c[[2, 0]] = v2", {60, 60, 60, 60, 4, 5, 6, 7, 50, 50, 50, 50}},
      {"c[(slice(None, None, None), [1, -1])] = 8.0", {0, 8, 2, 8, 4, 8, 6, 8, 8, 8, 10, 8}},
      {"c[(Ellipsis, [0])] = v3", {70, 1, 2, 3, 80, 5, 6, 7, 90, 9, 10, 11}},
  };
  for (const auto& row : rows) {
    SCOPED_TRACE(row.stmt);
    auto g = importSetItem(std::string("        c: \"f32[3, 4]\" = x.clone()\n") + "        " + row.stmt +
                           ";  setitem = c\n        u: \"f32[3, 4]\" = c + 0.0\n        return (setitem, u)\n");
    ASSERT_TRUE(g.ok()) << g.error().str();
    EXPECT_EQ(outputValues(*g, 0), row.want);
    EXPECT_EQ(outputValues(*g, 1), row.want);
  }
}

// Megatron's vocab-parallel masking on integer ids, as Dynamo prints it
// (`masked_input[input_mask] = 0;  setitem = masked_input`): where(mask, 0,
// ids), the form the verifier's vocab lemmas match; numbers written into
// an integer tensor truncate toward zero, into bool are nonzero, as torch.
TEST(FxTorchSetItem, IntegerAndBoolTensors) {
  auto g = importSetItem(R"FX(        sub: "i64[4]" = t - 4
        sub[tm] = 0;  setitem = sub
        k: "i64[4]" = sub.clone()
        k[0] = 2.7;  setitem_1 = k
        k[1] = -3.9
        b: "b8[4]" = tm.clone()
        b[0] = 2
        return (sub, k, b)
)FX");
  ASSERT_TRUE(g.ok()) << g.error().str();
  EXPECT_EQ(outputValues(*g, 0), (std::vector<double>{1, 0, 3, 0}));
  EXPECT_EQ(outputValues(*g, 1), (std::vector<double>{2, -3, 3, 0}));
  EXPECT_EQ(outputValues(*g, 2), (std::vector<double>{1, 1, 0, 1}));
  // (the returned name, rebound, is an identity of the value)
  const ir::Value* v = &g->value(g->outputs()[0]);
  while (v->kind == ir::ValueKind::NodeOutput && g->node(v->producer).op == ir::OpKind::Identity)
    v = &g->value(g->node(v->producer).inputs[0]);
  ASSERT_EQ(v->kind, ir::ValueKind::NodeOutput);
  EXPECT_EQ(g->node(v->producer).op, ir::OpKind::Where);
}

// After the statement the mutated name, the node FX binds and every exact
// alias read the new value; writes compose (typed and untyped bindings, and
// none).
TEST(FxTorchSetItem, AliasesSeeTheNewValue) {
  auto g = importSetItem(R"FX(        c: "f32[3, 4]" = x.clone()
        d = c
        c[0] = y;  setitem: "f32[3, 4]" = c
        e: "f32[3, 4]" = d * 1.0
        f: "f32[3, 4]" = setitem * 1.0
        c[(slice(None, None, None), 0)] = col
        g: "f32[3, 4]" = d * 1.0
        return (e, f, g, c)
)FX");
  ASSERT_TRUE(g.ok()) << g.error().str();
  const std::vector<double> row0 = {100, 101, 102, 103, 4, 5, 6, 7, 8, 9, 10, 11};
  const std::vector<double> both = {200, 101, 102, 103, 201, 5, 6, 7, 202, 9, 10, 11};
  EXPECT_EQ(outputValues(*g, 0), row0);
  EXPECT_EQ(outputValues(*g, 1), row0);
  EXPECT_EQ(outputValues(*g, 2), both);
  EXPECT_EQ(outputValues(*g, 3), both);
}

Error setItemError(const std::string& body) {
  auto g = importSetItem(body, "bad.py");
  EXPECT_FALSE(g.ok()) << body;
  return g.ok() ? Error{} : g.error();
}

// Writes the import cannot represent exactly, and those torch rejects, are
// errors with the node, the values and the reason, at the capture line.
TEST(FxTorchSetItem, UnrepresentableWritesAreRejected) {
  struct Case {
    const char* body;
    const char* id;
    const char* message;
    int line;
  };
  const std::string clone = "        c: \"f32[3, 4]\" = x.clone()\n";
  const Case cases[] = {
      // a graph input (through its alias line)
      {"        x[0] = y;  setitem = x\n        return (setitem,)\n", "fx-unsupported",
       "node 'setitem' mutates 'x' in place, which is (a view of) a graph input or module attribute: the caller "
       "would see the new value, a side effect the import cannot represent; in-place ops on graph inputs are not "
       "supported",
       17},
      // a view read after the write to its base, a base read after the write to its view
      {"        v: \"f32[4]\" = c[1]\n        c[0] = y;  setitem = c\n        u: \"f32[4]\" = v * 2.0\n"
       "        return (setitem, u)\n",
       "fx-unsupported",
       "node 'setitem' mutates 'c' in place while 'v', which may share its storage (a view of it, or the value it "
       "views), is still read: mutation through views is not supported",
       19},
      {"        v: \"f32[4]\" = c[1]\n        v[0] = 1.0;  setitem = v\n        return (c,)\n", "fx-unsupported",
       "node 'setitem' mutates 'v' in place while 'c', which may share its storage (a view of it, or the value it "
       "views), is still read: mutation through views is not supported",
       19},
      // the assigned value is a view of the written tensor
      {"        v: \"f32[4]\" = c[0]\n        c[1] = v;  setitem = c\n        return (setitem,)\n", "fx-unsupported",
       "node 'setitem' mutates 'c' in place while 'v', which may share its storage (a view of it, or the value it "
       "views), is still read: mutation through views is not supported",
       19},
      // advanced indices torch would broadcast together
      {"        c[(m, idx)] = 0.0;  setitem = c\n        return (setitem,)\n", "fx-unsupported",
       "operator.setitem 'setitem': index (m, idx) combines a tensor or list index with other tensor, list or "
       "integer indices (advanced indexing); only one with slices, None and Ellipsis is supported",
       18},
      {"        c[(0, m4)] = 0.0;  setitem = c\n        return (setitem,)\n", "fx-unsupported",
       "operator.setitem 'setitem': index (0, m4) combines a tensor or list index with other tensor, list or "
       "integer indices (advanced indexing); only one with slices, None and Ellipsis is supported",
       18},
      {"        c[y] = 0.0;  setitem = c\n        return (setitem,)\n", "fx-unsupported",
       "operator.setitem 'setitem': indexing with a f32 tensor ('y') is not supported (integer indices only)", 18},
      {"        c[[0, -3]] = 1.0;  setitem = c\n        return (setitem,)\n", "fx-unsupported",
       "operator.setitem 'setitem': index list [0, -3] writes position 0 twice (torch leaves which write wins "
       "undefined)",
       18},
      {"        i2: \"i64[2, 2]\" = idx.expand(2, 2)\n        c[i2] = 0.0;  setitem = c\n        return (setitem,)\n",
       "fx-unsupported", "operator.setitem 'setitem': the integer index 'i2' i64[2, 2] in subscript assignment must be 1-d",
       19},
      {"        u: \"u8[3]\" = m.to(torch.uint8)\n        c[u] = 0.0;  setitem = c\n        return (setitem,)\n",
       "fx-unsupported",
       "operator.setitem 'setitem': the u8 index 'u' (torch reads it as a mask, deprecated) is not supported in "
       "subscript assignment; a b8 mask is",
       19},
      {"        b: \"b8[]\" = m[0]\n        c[b] = 0.0;  setitem = c\n        return (setitem,)\n", "fx-unsupported",
       "operator.setitem 'setitem': a 0-d boolean index ('b') in subscript assignment is not supported", 19},
      {"        c['a'] = 0.0;  setitem = c\n        return (setitem,)\n", "fx-unsupported",
       "operator.setitem 'setitem': index item 'a' of 'a' is not supported in subscript assignment (ints, slice(a, "
       "b, c) with constant bounds, None, Ellipsis, a tensor or a list of ints)",
       18},
      {"        c[(0, 1, 2)] = 0.0;  setitem = c\n        return (setitem,)\n", "fx-index",
       "operator.setitem 'setitem': index (0, 1, 2) indexes 3 dims of a 2-d tensor", 18},
      {"        c[3] = y;  setitem = c\n        return (setitem,)\n", "fx-index",
       "operator.setitem 'setitem': index 3 in 3 is out of range for dim 0 of size 3", 18},
      {"        c[m4] = 0.0;  setitem = c\n        return (setitem,)\n", "fx-index",
       "operator.setitem 'setitem': the mask 'm4' bool[4] does not match dim 0 of the indexed f32[3, 4]", 18},
      // values torch rejects: shapes that do not broadcast, a dtype index_put
      // does not convert, a number out of the dtype's range, not a tensor
      {"        c[m] = w;  setitem = c\n        return (setitem,)\n", "fx-type",
       "operator.setitem 'setitem': value 'w' of type f32[3, 4] does not broadcast to the indexed region's shape "
       "[n, 4]",
       18},
      {"        c[0] = col;  setitem = c\n        return (setitem,)\n", "fx-type",
       "operator.setitem 'setitem': value 'col' of type f32[3] does not broadcast to the indexed region's shape [4]",
       18},
      {"        c[m] = h;  setitem = c\n        return (setitem,)\n", "fx-type",
       "operator.setitem 'setitem': value 'h' is f16 but the indexed tensor is f32: torch's index_put does not "
       "convert it",
       18},
      {"        k: \"i64[4]\" = t.clone()\n        k[0] = -inf;  setitem = k\n        return (setitem,)\n", "fx-type",
       "operator.setitem 'setitem': value -inf cannot be written into a tensor of dtype i64 (torch raises an "
       "overflow error)",
       19},
      {"        c[0] = 'a';  setitem = c\n        return (setitem,)\n", "fx-unsupported",
       "operator.setitem 'setitem': value 'a' of subscript assignment must be a tensor or a Python number", 18},
      // the node keeps the operand's type
      {"        c[0] = y;  setitem: \"f32[4, 3]\" = c\n        return (setitem,)\n", "fx-type",
       "node 'setitem' is declared f32[4, 3] but mutates 'c' of type f32[3, 4] in place (an in-place op keeps its "
       "type)",
       18},
  };
  for (const auto& c : cases) {
    std::string body = std::string(c.body).rfind("        x[", 0) == 0 ? c.body : clone + c.body;
    Error e = setItemError(body);
    EXPECT_EQ(e.id, c.id) << body << e.str();
    EXPECT_EQ(e.message, c.message) << body;
    EXPECT_EQ(e.location, "bad.py:" + std::to_string(c.line)) << body << e.str();
  }
}
}  // namespace
}  // namespace sp::frontend

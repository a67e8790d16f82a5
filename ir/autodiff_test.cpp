// Gradients of differentiate() against central finite differences (f64), and
// the SPMD rules against the sequential gradients, run on the interpreter.
#include "ir/autodiff.h"

#include <gtest/gtest.h>

#include <cmath>

#include "ir/interpreter.h"
#include "ir/text.h"

namespace sp::ir {
namespace {

Graph parse(const std::string& text) {
  auto g = parseGraph(text, "t.sp");
  EXPECT_TRUE(g.ok()) << g.error().str();
  return std::move(*g);
}

// <d_out, f(leaves)> summed over outputs, the leaves given.
double pairing(const Graph& g, const TensorMap& in, const TensorMap& tangents) {
  auto out = runGraph(g, in);
  EXPECT_TRUE(out.ok()) << out.error().str();
  double s = 0;
  for (auto& [name, t] : tangents) {
    const Tensor& y = out->at(name.substr(2));
    for (int64_t i = 0; i < y.numel(); ++i) s += y.getAsDouble(i) * t.getAsDouble(i);
  }
  return s;
}

// Checks every gradient output against a central difference along a random
// direction of its leaf.
void checkGradients(const std::string& text, std::vector<std::string> wrt = {}) {
  Graph fw = parse(text);
  GradOptions o;
  o.wrt = wrt;
  auto bw = differentiate(fw, o);
  ASSERT_TRUE(bw.ok()) << bw.error().str();
  auto in = prepareInputs(*bw, {}, {});
  ASSERT_TRUE(in.ok()) << in.error().str();
  TensorMap fwIn, tangents;
  for (auto& [n, t] : *in) (n.rfind("d_", 0) == 0 ? tangents : fwIn)[n] = t;
  auto grads = runGraph(*bw, *in);
  ASSERT_TRUE(grads.ok()) << grads.error().str();
  int checked = 0;
  for (auto& [name, gr] : *grads) {
    if (name.rfind("grad_", 0) != 0) continue;
    std::string leaf = name.substr(5);
    Tensor dir = randomTensor(gr.type(), {}, 7, "dir_" + leaf);
    const double eps = 1e-6;
    TensorMap plus = fwIn, minus = fwIn;
    Tensor p(gr.dtype(), gr.dims()), m(gr.dtype(), gr.dims());
    double analytic = 0;
    for (int64_t i = 0; i < gr.numel(); ++i) {
      double x = fwIn.at(leaf).getAsDouble(i), d = dir.getAsDouble(i);
      p.setFromDouble(i, x + eps * d);
      m.setFromDouble(i, x - eps * d);
      analytic += gr.getAsDouble(i) * d;
    }
    plus[leaf] = p, minus[leaf] = m;
    double numeric = (pairing(fw, plus, tangents) - pairing(fw, minus, tangents)) / (2 * eps);
    EXPECT_NEAR(analytic, numeric, 1e-6 * std::max(1.0, std::abs(numeric))) << leaf << "\n" << printGraph(*bw);
    ++checked;
  }
  EXPECT_GT(checked, 0);
}

TEST(Autodiff, MlpWithNormsMatchesFiniteDifferences) {
  checkGradients(
      "graph g {\n  input %x: f64[2, 3, 4]\n  param %g1: f64[4]\n  param %b1: f64[4]\n  param %w1: f64[4, 6]\n"
      "  param %w2: f64[6, 4]\n  param %g2: f64[4]\n"
      "  %n: f64[2, 3, 4] = layer_norm(%x, %g1, %b1)\n  %h: f64[2, 3, 6] = matmul(%n, %w1)\n"
      "  %a: f64[2, 3, 6] = gelu(%h)\n  %s: f64[2, 3, 6] = silu(%a)\n  %m: f64[2, 3, 4] = matmul(%s, %w2)\n"
      "  %r: f64[2, 3, 4] = add(%x, %m)\n  %o: f64[2, 3, 4] = rms_norm(%r, %g2) {epsilon = 1e-5}\n"
      "  output %o\n}\n",
      {"x", "g1", "b1", "w1", "w2", "g2"});
}

TEST(Autodiff, AttentionLayoutOpsMatchFiniteDifferences) {
  checkGradients(
      "graph g {\n  input %x: f64[4, 8]\n  param %wqkv: f64[8, 24]\n  input %mask: f64[4, 4]\n"
      "  %h: f64[4, 24] = matmul(%x, %wqkv)\n"
      "  %q, %k, %v = split(%h) {axis = 1, sizes = [8, 8, 8]}\n"
      "  %q3: f64[4, 2, 4] = reshape(%q) {shape = [4, 2, 4]}\n  %k3: f64[4, 2, 4] = reshape(%k) {shape = [4, 2, 4]}\n"
      "  %v3: f64[4, 2, 4] = reshape(%v) {shape = [4, 2, 4]}\n"
      "  %lo: f64[4, 2, 2] = slice(%q3) {starts = [0], ends = [2], axes = [2]}\n"
      "  %hi: f64[4, 2, 2] = slice(%q3) {starts = [2], ends = [4], axes = [2]}\n"
      "  %nh: f64[4, 2, 2] = neg(%hi)\n  %rq: f64[4, 2, 4] = concat(%nh, %lo) {axis = 2}\n"
      "  %qs: f64[4, 2, 4] = add(%rq, %q3)\n"
      "  %qh: f64[2, 4, 4] = transpose(%qs) {perm = [1, 0, 2]}\n  %kt: f64[2, 4, 4] = transpose(%k3) {perm = [1, 2, 0]}\n"
      "  %vh: f64[2, 4, 4] = transpose(%v3) {perm = [1, 0, 2]}\n  %sc: f64[2, 4, 4] = matmul(%qh, %kt)\n"
      "  %c: f64[] = constant() {value = dense<f64[], [0.5]>}\n  %ss: f64[2, 4, 4] = mul(%sc, %c)\n"
      "  %sm: f64[2, 4, 4] = add(%ss, %mask)\n  %p: f64[2, 4, 4] = softmax(%sm)\n"
      "  %a: f64[2, 4, 4] = matmul(%p, %vh)\n  %u: f64[2, 1, 4, 4] = unsqueeze(%a) {axes = [1]}\n"
      "  %e: f64[2, 3, 4, 4] = expand(%u) {shape = [2, 3, 4, 4]}\n  %t: f64[2, 4] = reduce_mean(%e) {axes = [1, 2], keepdims = 0}\n"
      "  output %t\n}\n",
      {"x", "wqkv", "mask"});
}

// A weight broadcast over a batch dim of the other operand: the dim joins
// the contraction (no [..., c, k, n] intermediate). Each placement of the
// broadcast dim: absent from B (rank 2 and 3 against rank 4), a 1 in B
// (an expert bank [E, 1, k, n]), two broadcast dims, a 1 at the front.
TEST(Autodiff, MatMulWithABroadcastWeightMatchesFiniteDifferences) {
  // x, w, y, and the largest value the backward may hold: old form's
  // [..., c, k, n] was 120 in the 2nd, 3rd and last cases
  struct Case {
    const char *x, *w, *y;
    int64_t largest;
  };
  const Case cases[] = {
      {"f64[3, 2, 4]", "f64[4, 5]", "f64[3, 2, 5]", 40},
      {"f64[2, 3, 2, 4]", "f64[2, 1, 4, 5]", "f64[2, 3, 2, 5]", 80},
      {"f64[2, 3, 2, 4]", "f64[4, 5]", "f64[2, 3, 2, 5]", 80},
      {"f64[2, 3, 2, 4]", "f64[3, 4, 5]", "f64[2, 3, 2, 5]", 120},
      {"f64[2, 3, 2, 4]", "f64[1, 3, 4, 5]", "f64[2, 3, 2, 5]", 120},
      {"f64[2, 3, 1, 4]", "f64[2, 1, 4, 5]", "f64[2, 3, 1, 5]", 40},
  };
  for (auto& c : cases) {
    SCOPED_TRACE(std::string(c.x) + " x " + c.w);
    checkGradients(std::string("graph g {\n  input %x: ") + c.x + "\n  param %w: " + c.w + "\n  %y: " + c.y +
                       " = matmul(%x, %w)\n  %o: " + c.y + " = tanh(%y)\n  output %o\n}\n",
                   {"x", "w"});
    // no intermediate larger than the operands and the result
    auto bw = differentiate(parse(std::string("graph g {\n  input %x: ") + c.x + "\n  param %w: " + c.w +
                                  "\n  %y: " + c.y + " = matmul(%x, %w)\n  output %y\n}\n"),
                            GradOptions{});
    ASSERT_TRUE(bw.ok()) << bw.error().str();
    for (const Node& n : bw->nodes())
      for (ValueId v : n.outputs) {
        int64_t count = 1;
        for (int64_t d : concreteDims(bw->value(v).type.shape)) count *= d;
        EXPECT_LE(count, c.largest) << printGraph(*bw);
      }
  }
}

TEST(Autodiff, UnsupportedOpIsNamed) {
  Graph fw = parse("graph g {\n  param %w: f32[4]\n  %m: f32[4] = max(%w, %w)\n  output %m\n}\n");
  auto bw = differentiate(fw);
  ASSERT_FALSE(bw.ok());
  EXPECT_EQ(bw.error().id, "autodiff-unsupported");
  EXPECT_NE(bw.error().message.find("max 'm'"), std::string::npos) << bw.error().message;
}

// Tensor parallel with sequence parallelism: the backward gets Megatron's
// collectives from the replication rule alone (an all_reduce of the norm
// weight's gradient over tp, a reduce_scatter for the gathered tokens), and
// every rank's gradients equal the sequential ones.
TEST(Autodiff, SequenceParallelGradientsEqualTheSequentialOnes) {
  Graph seq = parse(
      "graph s {\n  input %x: f64[4, 6]\n  param %g: f64[6]\n  param %w1: f64[6, 8]\n  param %w2: f64[8, 6]\n"
      "  %n: f64[4, 6] = rms_norm(%x, %g)\n  %h: f64[4, 8] = matmul(%n, %w1)\n  %a: f64[4, 8] = tanh(%h)\n"
      "  %m: f64[4, 6] = matmul(%a, %w2)\n  %y: f64[4, 6] = add(%x, %m)\n  output %y\n}\n");
  auto dist = parseProgram(
      "program d {\n  world 2\n  mesh [tp = 2]\n  rank 0..1 {\n    input %x: f64[2, 6]\n    param %g: f64[6]\n"
      "    param %w1: f64[6, 4]\n    param %w2: f64[4, 6]\n    %n: f64[2, 6] = rms_norm(%x, %g)\n"
      "    %ng: f64[4, 6] = all_gather(%n) {group = \"tp\", dim = 0}\n    %h: f64[4, 4] = matmul(%ng, %w1)\n"
      "    %a: f64[4, 4] = tanh(%h)\n    %mp: f64[4, 6] = matmul(%a, %w2)\n"
      "    %m: f64[2, 6] = reduce_scatter(%mp) {group = \"tp\", dim = 0}\n    %y: f64[2, 6] = add(%x, %m)\n"
      "    output %y\n  }\n}\n",
      "d.sp");
  ASSERT_TRUE(dist.ok()) << dist.error().str();
  GradOptions o;
  o.wrt = {"x", "g", "w1", "w2"};
  auto sb = differentiate(seq, o);
  ASSERT_TRUE(sb.ok()) << sb.error().str();
  o.varies = {{"x", {"tp"}}, {"g", {}}, {"w1", {"tp"}}, {"w2", {"tp"}}};
  auto db = differentiate(*dist, o);
  ASSERT_TRUE(db.ok()) << db.error().str();
  std::string text = printProgram(*db);
  EXPECT_NE(text.find("reduce_scatter(%bw_dA"), std::string::npos) << text;  // the gathered tokens' gradient
  EXPECT_NE(text.find("%grad_g: f64[6] = all_reduce("), std::string::npos) << text;
  // Run both on shards of the same data.
  auto sin = prepareInputs(*sb, {}, {});
  ASSERT_TRUE(sin.ok());
  auto sout = runGraph(*sb, *sin);
  ASSERT_TRUE(sout.ok()) << sout.error().str();
  auto rows = [](const Tensor& t, int64_t lo, int64_t hi) {
    int64_t cols = t.numel() / t.dims()[0];
    Tensor r(t.dtype(), {hi - lo, t.dims()[1]});
    for (int64_t i = 0; i < (hi - lo) * cols; ++i) r.setFromDouble(i, t.getAsDouble(lo * cols + i));
    return r;
  };
  auto cols = [](const Tensor& t, int64_t lo, int64_t hi) {
    int64_t n = t.dims()[0], c = t.dims()[1];
    Tensor r(t.dtype(), {n, hi - lo});
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = lo; j < hi; ++j) r.setFromDouble(i * (hi - lo) + j - lo, t.getAsDouble(i * c + j));
    return r;
  };
  std::vector<TensorMap> given(2);
  for (int r = 0; r < 2; ++r) {
    given[size_t(r)] = {{"x", rows(sin->at("x"), 2 * r, 2 * r + 2)},
                        {"d_y", rows(sin->at("d_y"), 2 * r, 2 * r + 2)},
                        {"g", sin->at("g")},
                        {"w1", cols(sin->at("w1"), 4 * r, 4 * r + 4)},
                        {"w2", rows(sin->at("w2"), 4 * r, 4 * r + 4)}};
  }
  auto dout = runProgram(*db, given);
  ASSERT_TRUE(dout.ok()) << dout.error().str();
  auto near = [](const Tensor& a, const Tensor& b, const std::string& what) {
    ASSERT_EQ(a.numel(), b.numel()) << what;
    for (int64_t i = 0; i < a.numel(); ++i) EXPECT_NEAR(a.getAsDouble(i), b.getAsDouble(i), 1e-9) << what << " " << i;
  };
  for (int r = 0; r < 2; ++r) {
    const TensorMap& d = (*dout)[size_t(r)];
    near(d.at("grad_x"), rows(sout->at("grad_x"), 2 * r, 2 * r + 2), "grad_x");
    near(d.at("grad_g"), sout->at("grad_g"), "grad_g");
    near(d.at("grad_w1"), cols(sout->at("grad_w1"), 4 * r, 4 * r + 4), "grad_w1");
    near(d.at("grad_w2"), rows(sout->at("grad_w2"), 4 * r, 4 * r + 4), "grad_w2");
  }
}

}  // namespace
}  // namespace sp::ir

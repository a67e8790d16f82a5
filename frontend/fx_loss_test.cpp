// nll_loss_forward / nll_loss_backward (F.cross_entropy under make_fx),
// aten.gather and aten.repeat: imported captures run by the interpreter
// against values computed here by hand with torch's semantics (reduction
// none/mean/sum, ignore_index, class weights), the IR forms chosen, and
// the errors for what is not mapped.
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "frontend/fx_import.h"
#include "frontend/fx_test_util.h"
#include "ir/interpreter.h"

namespace sp::frontend {
namespace {

using ir::DType;
using ir::Tensor;
using fx_test::expectNear;
using fx_test::noise;
using fx_test::typed;
using fx_test::values;

std::map<std::string, int> opCounts(const ir::Graph& g) {
  std::map<std::string, int> c;
  for (const auto& n : g.nodes()) ++c[std::string(ir::opName(n.op))];
  return c;
}

Result<ir::Graph> importBody(const std::string& sig, const std::string& body) {
  std::string text = "class GraphModule(torch.nn.Module):\n    def forward(self, " + sig + "):\n" + body;
  return importFxText(text, "loss.py");
}

const int64_t kN = 4, kC = 5;
const std::vector<double> kTarget = {3, -100, 0, 4};  // row 1 ignored (the default ignore_index)

std::vector<double> logSoftmaxRows(const std::vector<double>& x) {
  std::vector<double> y(x.size());
  for (int64_t b = 0; b < kN; ++b) {
    double m = -INFINITY, s = 0;
    for (int64_t j = 0; j < kC; ++j) m = std::max(m, x[size_t(b * kC + j)]);
    for (int64_t j = 0; j < kC; ++j) s += std::exp(x[size_t(b * kC + j)] - m);
    for (int64_t j = 0; j < kC; ++j) y[size_t(b * kC + j)] = x[size_t(b * kC + j)] - m - std::log(s);
  }
  return y;
}

struct Want {
  std::vector<double> perRow;  // -w[t] * lp[b, t], 0 where ignored
  double sum = 0, weight = 0;  // sum of perRow, sum of counted weights
};

Want nllByHand(const std::vector<double>& lp, const std::vector<double>& t, const std::vector<double>* w,
               int64_t ignore) {
  Want r;
  for (int64_t b = 0; b < kN; ++b) {
    int64_t c = int64_t(t[size_t(b)]);
    if (c == ignore) {
      r.perRow.push_back(0);
      continue;
    }
    double wt = w ? (*w)[size_t(c)] : 1.0;
    r.perRow.push_back(-wt * lp[size_t(b * kC + c)]);
    r.sum += r.perRow.back();
    r.weight += wt;
  }
  return r;
}

// F.cross_entropy as make_fx lowers it: _log_softmax, then nll_loss_forward.
std::string crossEntropyBody(int reduction, int64_t ignore, bool weight, bool viaLogSoftmax) {
  std::string ty = reduction == 0 ? "f32[4]" : "f32[]";
  std::string in = viaLogSoftmax ? "_log_softmax" : "x";
  std::string s;
  if (viaLogSoftmax)
    s += "        _log_softmax: \"f32[4, 5]\" = torch.ops.aten._log_softmax.default(x, 1, False)\n";
  s += "        nll_loss_forward = torch.ops.aten.nll_loss_forward.default(" + in + ", target, " +
       (weight ? "w" : "None") + ", " + std::to_string(reduction) + ", " + std::to_string(ignore) + ")\n";
  s += "        getitem: \"" + ty + "\" = nll_loss_forward[0]\n";
  s += "        getitem_1: \"f32[]\" = nll_loss_forward[1]\n";
  s += "        return (getitem, getitem_1)\n";
  return s;
}

TEST(FxLoss, CrossEntropyMatchesTorchSemantics) {
  auto x = noise(size_t(kN * kC), 7);
  std::vector<double> w = {0.5, 1.0, 2.0, 1.5, 0.25};
  auto lp = logSoftmaxRows(x);
  for (bool viaLogSoftmax : {true, false})
    for (bool weight : {false, true})
      for (int64_t ignore : {int64_t(-100), int64_t(0)})
        for (int reduction : {0, 1, 2}) {
          std::string what = std::string(viaLogSoftmax ? "cross_entropy" : "nll_loss") +
                             (weight ? " weighted" : "") + " ignore " + std::to_string(ignore) +
                             " reduction " + std::to_string(reduction);
          SCOPED_TRACE(what);
          std::vector<double> t = kTarget;
          if (ignore == 0) t[1] = 2;  // row 2 (target 0) is the ignored one
          auto g = importBody(std::string("x: \"f32[4, 5]\", target: \"i64[4]\"") + (weight ? ", w: \"f32[5]\"" : ""),
                              crossEntropyBody(reduction, ignore, weight, viaLogSoftmax));
          ASSERT_TRUE(g.ok()) << g.error().str();
          // The log_softmax form is the IR's cross_entropy on the logits.
          EXPECT_EQ(opCounts(*g)["cross_entropy"], viaLogSoftmax ? 1 : 0);
          // Without it (a log-probability input of any origin) the pick is written out.
          if (!viaLogSoftmax) EXPECT_EQ(opCounts(*g)["gather_elements"], 1);
          ir::TensorMap in{{"x", typed(DType::F32, {kN, kC}, viaLogSoftmax ? x : lp)},
                           {"target", typed(DType::I64, {kN}, t)}};
          if (weight) in.emplace("w", typed(DType::F32, {kC}, w));
          auto out = ir::runGraph(*g, in);
          ASSERT_TRUE(out.ok()) << out.error().str();
          Want want = nllByHand(lp, t, weight ? &w : nullptr, ignore);
          std::vector<double> loss = reduction == 0   ? want.perRow
                                     : reduction == 1 ? std::vector<double>{want.sum / want.weight}
                                                      : std::vector<double>{want.sum};
          expectNear(values(out->at("getitem")), loss, 1e-5, "loss");
          // total_weight: torch leaves it 0 for a batched reduction none.
          expectNear(values(out->at("getitem_1")), {reduction == 0 ? 0.0 : want.weight}, 1e-6, "total_weight");
        }
}

TEST(FxLoss, UnbatchedNllLoss) {
  // x [C], target 0-d: torch's total_weight is w[t] even for reduction none.
  std::vector<double> lp = {-1.5, -0.25, -3.0};
  for (int reduction : {0, 1, 2}) {
    auto g = importBody("x: \"f32[3]\", target: \"i64[]\"",
                        "        nll_loss_forward = torch.ops.aten.nll_loss_forward.default(x, target, None, " +
                            std::to_string(reduction) +
                            ", -100)\n        getitem: \"f32[]\" = nll_loss_forward[0]\n"
                            "        getitem_1: \"f32[]\" = nll_loss_forward[1]\n        return (getitem, getitem_1)\n");
    ASSERT_TRUE(g.ok()) << g.error().str();
    auto out = ir::runGraph(*g, {{"x", typed(DType::F32, {3}, lp)}, {"target", typed(DType::I64, {}, {1})}});
    ASSERT_TRUE(out.ok()) << out.error().str();
    expectNear(values(out->at("getitem")), {0.25}, 1e-6, "loss");
    expectNear(values(out->at("getitem_1")), {1.0}, 1e-6, "total_weight");
  }
}

TEST(FxLoss, NllLossBackwardMatchesTorchSemantics) {
  // grad_input[b, c] = -w[t_b] * g_b at c == t_b of counted rows, else 0;
  // g_b = g (sum), g / total_weight (mean), g[b] (none).
  std::vector<double> w = {0.5, 1.0, 2.0, 1.5, 0.25};
  std::vector<double> gNone = {0.5, -1.0, 2.0, 3.0};
  for (bool weight : {false, true})
    for (int reduction : {0, 1, 2}) {
      SCOPED_TRACE(std::string(weight ? "weighted " : "") + "reduction " + std::to_string(reduction));
      std::string gty = reduction == 0 ? "f32[4]" : "f32[]";
      auto g = importBody("g: \"" + gty + "\", lp: \"f32[4, 5]\", target: \"i64[4]\", w: \"f32[5]\", tw: \"f32[]\"",
                          "        nll_loss_backward: \"f32[4, 5]\" = torch.ops.aten.nll_loss_backward.default(g, lp, "
                          "target, " + std::string(weight ? "w" : "None") + ", " + std::to_string(reduction) +
                              ", -100, tw)\n        return (nll_loss_backward,)\n");
      ASSERT_TRUE(g.ok()) << g.error().str();
      double tw = 2.5, gs = 1.5;
      ir::TensorMap in{{"lp", typed(DType::F32, {kN, kC}, noise(size_t(kN * kC), 3))},
                       {"target", typed(DType::I64, {kN}, kTarget)},
                       {"tw", typed(DType::F32, {}, {tw})}};
      in.emplace("g", reduction == 0 ? typed(DType::F32, {kN}, gNone) : typed(DType::F32, {}, {gs}));
      if (weight) in.emplace("w", typed(DType::F32, {kC}, w));
      else in.emplace("w", typed(DType::F32, {kC}, std::vector<double>(size_t(kC), 9.0)));  // unused
      auto out = ir::runGraph(*g, in);
      ASSERT_TRUE(out.ok()) << out.error().str();
      std::vector<double> want(size_t(kN * kC), 0.0);
      for (int64_t b = 0; b < kN; ++b) {
        int64_t c = int64_t(kTarget[size_t(b)]);
        if (c == -100) continue;
        double gb = reduction == 0 ? gNone[size_t(b)] : reduction == 1 ? gs / tw : gs;
        want[size_t(b * kC + c)] = -(weight ? w[size_t(c)] : 1.0) * gb;
      }
      expectNear(values(out->at("nll_loss_backward")), want, 1e-6, "grad_input");
    }
}

TEST(FxLoss, UnsupportedNllFormsNameTheOp) {
  // nll_loss over [N, C, d] (nll_loss2d's images) is not the 2-D op: an
  // error naming it, not a different import.
  auto g = importBody("x: \"f32[2, 3, 4]\", target: \"i64[2, 4]\"",
                      "        nll_loss_forward = torch.ops.aten.nll_loss_forward.default(x, target, None, 1, -100)\n"
                      "        getitem: \"f32[]\" = nll_loss_forward[0]\n        return (getitem,)\n");
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.error().str().find("aten.nll_loss_forward.default of a rank-3 input"), std::string::npos)
      << g.error().str();
  EXPECT_NE(g.error().str().find("loss.py:"), std::string::npos) << g.error().str();
  auto bad = importBody("x: \"f32[2, 3]\", target: \"i64[2]\"",
                        "        nll_loss_forward = torch.ops.aten.nll_loss_forward.default(x, target, None, 3, -100)\n"
                        "        getitem: \"f32[]\" = nll_loss_forward[0]\n        return (getitem,)\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().str().find("reduction 3"), std::string::npos) << bad.error().str();
}

TEST(FxLoss, GatherIsGatherElements) {
  auto g = importBody("x: \"f32[3, 4]\", i: \"i64[3, 2]\", j: \"i64[2, 4]\"",
                 "        gather: \"f32[3, 2]\" = torch.ops.aten.gather.default(x, -1, i)\n"
                 "        gather_1: \"f32[2, 4]\" = torch.ops.aten.gather.default(x, 0, j, sparse_grad = False)\n"
                 "        return (gather, gather_1)\n");
  ASSERT_TRUE(g.ok()) << g.error().str();
  EXPECT_EQ(opCounts(*g)["gather_elements"], 2);
  std::vector<double> x = {0, 1, 2, 3, 10, 11, 12, 13, 20, 21, 22, 23};
  auto out = ir::runGraph(*g, {{"x", typed(DType::F32, {3, 4}, x)},
                               {"i", typed(DType::I64, {3, 2}, {3, 0, 1, 1, 2, 0})},
                               {"j", typed(DType::I64, {2, 4}, {2, 0, 1, 2, 0, 0, 0, 1})}});
  ASSERT_TRUE(out.ok()) << out.error().str();
  expectNear(values(out->at("gather")), {3, 0, 11, 11, 22, 20}, 0, "dim -1");
  expectNear(values(out->at("gather_1")), {20, 1, 12, 23, 0, 1, 2, 13}, 0, "dim 0");
  // An index of another rank is not torch's gather.
  auto bad = importBody("x: \"f32[3, 4]\", i: \"i64[3]\"",
                        "        gather: \"f32[3]\" = torch.ops.aten.gather.default(x, 1, i)\n        return (gather,)\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().str().find("the index must have the input's rank"), std::string::npos) << bad.error().str();
}

TEST(FxLoss, RepeatTiles) {
  auto g = importBody("x: \"f32[2, 3]\"",
                      "        repeat: \"f32[2, 4, 3]\" = torch.ops.aten.repeat.default(x, [2, 2, 1])\n"
                      "        repeat_1: \"f32[2, 6]\" = torch.ops.aten.repeat.default(x, [1, 2])\n"
                      "        repeat_2: \"f32[2, 3]\" = torch.ops.aten.repeat.default(x, [1, 1])\n"
                      "        return (repeat, repeat_1, repeat_2)\n");
  ASSERT_TRUE(g.ok()) << g.error().str();
  auto out = ir::runGraph(*g, {{"x", typed(DType::F32, {2, 3}, {1, 2, 3, 4, 5, 6})}});
  ASSERT_TRUE(out.ok()) << out.error().str();
  std::vector<double> tile2 = {1, 2, 3, 4, 5, 6, 1, 2, 3, 4, 5, 6};
  std::vector<double> want0 = tile2;
  want0.insert(want0.end(), tile2.begin(), tile2.end());
  expectNear(values(out->at("repeat")), want0, 0, "repeat [2, 2, 1]");
  expectNear(values(out->at("repeat_1")), {1, 2, 3, 1, 2, 3, 4, 5, 6, 4, 5, 6}, 0, "repeat [1, 2]");
  expectNear(values(out->at("repeat_2")), {1, 2, 3, 4, 5, 6}, 0, "repeat [1, 1]");
  for (const char* reps : {"[2]", "[1, 0]"}) {
    auto bad = importBody("x: \"f32[2, 3]\"", std::string("        repeat: \"f32[2, 3]\" = torch.ops.aten.repeat.default(x, ") +
                                                 reps + ")\n        return (repeat,)\n");
    ASSERT_FALSE(bad.ok()) << reps;
    EXPECT_NE(bad.error().str().find("repeat"), std::string::npos) << bad.error().str();
  }
}

}  // namespace
}  // namespace sp::frontend

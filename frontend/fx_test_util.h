#pragma once
// Helpers shared by the torch.fx importer tests.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "frontend/fx_import.h"
#include "ir/interpreter.h"
#include "ir/tensor.h"

namespace sp::frontend::fx_test {

inline const std::string kData = SP_SOURCE_DIR "/tests/data/fx/";

// The head of a torch-level (Dynamo) graph over `inputs`, (name, type)
// pairs: forward's signature with Dynamo's L_<name>_ arguments, and the
// aliases `name = L_<name>_` it writes first.
template <class Inputs>
std::string dynamoHeader(const Inputs& inputs) {
  std::string sig, aliases;
  for (const auto& [n, t] : inputs) {
    sig += std::string(sig.empty() ? "" : ", ") + "L_" + n + "_: \"" + t + "\"";
    aliases += std::string("        ") + n + " = L_" + n + "_\n";
  }
  return "class GraphModule(torch.nn.Module):\n    def forward(self, " + sig + "):\n" + aliases;
}

// A tensor of dtype t holding v (converted with the dtype's rounding).
inline ir::Tensor typed(ir::DType t, std::vector<int64_t> dims, const std::vector<double>& v) {
  ir::Tensor x(t, std::move(dims));
  for (size_t i = 0; i < v.size(); ++i) x.setFromDouble(int64_t(i), v[i]);
  return x;
}

inline std::vector<double> values(const ir::Tensor& t) {
  std::vector<double> v;
  for (int64_t i = 0; i < t.numel(); ++i) v.push_back(t.getAsDouble(i));
  return v;
}

// Deterministic pseudo-random values in [-1, 1).
inline std::vector<double> noise(size_t n, uint32_t seed) {
  std::vector<double> v(n);
  for (size_t i = 0; i < n; ++i) {
    seed = seed * 1664525u + 1013904223u;
    v[i] = double(seed >> 8) / double(1u << 23) - 1.0;
  }
  return v;
}

inline void expectNear(const std::vector<double>& got, const std::vector<double>& want, double tol,
                       const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << what << " [" << i << "]";
}

// d/d(param) of Σ gy · g's output `out`, by central differences (step h),
// the output evaluated by running g on `in` with param perturbed.
inline std::vector<double> finiteDifferences(const ir::Graph& g, const ir::TensorMap& in, const std::string& param,
                                             const std::string& out, const std::vector<double>& gy,
                                             double h = 1e-2) {
  const std::vector<double> xs = values(in.at(param));
  std::vector<double> grad(xs.size());
  for (size_t i = 0; i < xs.size(); ++i) {
    double s[2];
    for (int k = 0; k < 2; ++k) {
      auto xp = xs;
      xp[i] += k ? -h : h;
      ir::TensorMap in2 = in;
      in2[param] = typed(in.at(param).dtype(), in.at(param).dims(), xp);
      auto r = ir::runGraph(g, in2);
      EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().str());
      if (!r.ok()) return grad;
      auto y = values(r->at(out));
      s[k] = 0;
      for (size_t j = 0; j < y.size() && j < gy.size(); ++j) s[k] += y[j] * gy[j];
    }
    grad[i] = (s[0] - s[1]) / (2 * h);
  }
  return grad;
}

// Each of 2 ranks' inputs for a TP 2 Dynamo MLP of fc1 [32, 16] and fc2
// [16, 32] (no biases split): rank r holds rows r*16.. of fc1's weight and
// columns r*16.. of fc2's; the other inputs whole.
inline std::vector<ir::TensorMap> mlpTp2Inputs(const ir::TensorMap& in) {
  std::vector<ir::TensorMap> ranks(2, in);
  for (int64_t r = 0; r < 2; ++r) {
    auto w1 = values(in.at("L_self_modules_fc1_parameters_weight_"));
    auto w2 = values(in.at("L_self_modules_fc2_parameters_weight_"));
    std::vector<double> s1(w1.begin() + r * 256, w1.begin() + (r + 1) * 256), s2;
    for (int64_t row = 0; row < 16; ++row)
      for (int64_t col = r * 16; col < (r + 1) * 16; ++col) s2.push_back(w2[size_t(row * 32 + col)]);
    ranks[size_t(r)]["L_self_modules_fc1_parameters_weight_"] = typed(ir::DType::F32, {16, 16}, s1);
    ranks[size_t(r)]["L_self_modules_fc2_parameters_weight_"] = typed(ir::DType::F32, {16, 16}, s2);
  }
  return ranks;
}

// The rank files <dir><pair>/dist/<stem>.r0.py and .r1.py imported on a
// TP 2 mesh (c10d group "0" as tp) and run on each rank's inputs.
inline Result<std::vector<ir::TensorMap>> runTp2Capture(const std::string& dir, const std::string& pair,
                                                        const std::string& stem,
                                                        const std::vector<ir::TensorMap>& ranks) {
  FxOptions opts;
  opts.mesh.axes.push_back({"tp", 2});
  opts.groups["0"] = "tp";
  auto prog = importFxProgram({dir + pair + "/dist/" + stem + ".r0.py", dir + pair + "/dist/" + stem + ".r1.py"}, opts);
  if (!prog.ok()) return prog.error();
  return ir::runProgram(*prog, ranks);
}

}  // namespace sp::frontend::fx_test

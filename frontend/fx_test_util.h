#pragma once
// Helpers shared by the torch.fx importer tests.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "ir/tensor.h"

namespace sp::frontend::fx_test {

inline const std::string kData = SP_SOURCE_DIR "/tests/data/fx/";

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

}  // namespace sp::frontend::fx_test

#pragma once
// Small helpers shared by the interpreter and scheduler tests.
#include <gtest/gtest.h>

#include <set>
#include <vector>

#include "ir/graph.h"

namespace sp::ir::test {

inline Tensor f32(std::vector<int64_t> dims, std::vector<float> v) {
  return Tensor::fromFloats(DType::F32, std::move(dims), v);
}

inline std::vector<double> vals(const Tensor& t) {
  std::vector<double> v;
  for (int64_t i = 0; i < t.numel(); ++i) v.push_back(t.getAsDouble(i));
  return v;
}

inline Graph finish(GraphBuilder gb) {
  auto g = std::move(gb).finish();
  EXPECT_TRUE(g.ok()) << (g.ok() ? "" : g.error().str());
  return g.ok() ? std::move(*g) : Graph();
}

}  // namespace sp::ir::test

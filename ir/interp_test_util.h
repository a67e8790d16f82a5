#pragma once
// Small helpers shared by the interpreter and scheduler tests.
#include <gtest/gtest.h>

#include <set>
#include <vector>

#include "ir/graph.h"
#include "ir/text.h"

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

// A graph from text IR (a test failure and an empty graph on errors).
inline Graph parsed(const std::string& text, const std::string& filename) {
  auto g = parseGraph(text, filename);
  EXPECT_TRUE(g.ok()) << (g.ok() ? "" : g.error().str());
  return g.ok() ? std::move(*g) : Graph();
}

// Two ranks: l = neg(x) local, s = all_reduce(x) over tp, t = exp(s).
inline Result<Program> localAndReduced() {
  return parseProgram(R"(program p {
  world 2
  mesh [tp = 2]
  rank 0..1 {
    input %x: f32[2]
    %l: f32[2] = neg(%x)
    %s: f32[2] = all_reduce(%x) {group = "tp"}
    %t: f32[2] = exp(%s)
    output %l
    output %t
  }
})", "p.sp");
}

}  // namespace sp::ir::test

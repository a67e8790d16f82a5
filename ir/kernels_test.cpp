#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "ir/op.h"

namespace sp::ir {
namespace {

Tensor F(std::vector<int64_t> dims, std::vector<float> v, DType t = DType::F32) {
  return Tensor::fromFloats(t, std::move(dims), v);
}
Tensor I(std::vector<int64_t> dims, std::vector<int64_t> v, DType t = DType::I64) {
  Tensor x(t, std::move(dims));
  for (size_t i = 0; i < v.size(); ++i) {
    if (t == DType::I64) x.mutableData<int64_t>()[i] = v[i];
    else x.setFromDouble(int64_t(i), double(v[i]));
  }
  return x;
}
std::vector<double> vals(const Tensor& t) {
  std::vector<double> v;
  for (int64_t i = 0; i < t.numel(); ++i) v.push_back(t.getAsDouble(i));
  return v;
}
std::vector<int64_t> ints(const Tensor& t) {
  return std::vector<int64_t>(t.data<int64_t>(), t.data<int64_t>() + t.numel());
}

std::vector<Tensor> run(OpKind op, std::vector<Tensor> in, AttrMap attrs = {}) {
  auto a = completeAttrs(op, std::move(attrs));
  EXPECT_TRUE(a.ok());
  std::vector<Tensor> out;
  Status s = opInfo(op).kernel(op, *a, in, out);
  EXPECT_TRUE(s.ok()) << (s.ok() ? "" : s.error().str());
  return out;
}
Tensor run1(OpKind op, std::vector<Tensor> in, AttrMap attrs = {}) {
  auto out = run(op, std::move(in), std::move(attrs));
  return out.empty() ? Tensor() : out[0];
}
std::string runErr(OpKind op, std::vector<Tensor> in, AttrMap attrs = {}) {
  auto a = completeAttrs(op, std::move(attrs));
  std::vector<Tensor> out;
  Status s = opInfo(op).kernel(op, *a, in, out);
  EXPECT_FALSE(s.ok());
  return s.ok() ? "" : s.error().id + ": " + s.error().message;
}

void expectNear(const std::vector<double>& got, const std::vector<double>& want, double tol = 1e-6) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << "at " << i;
}

TEST(KernelUnary, FloatOps) {
  Tensor x = F({4}, {-2, -0.5, 0, 1.5});
  expectNear(vals(run1(OpKind::Relu, {x})), {0, 0, 0, 1.5});
  expectNear(vals(run1(OpKind::Sigmoid, {x})), {1 / (1 + std::exp(2.0)), 1 / (1 + std::exp(0.5)), 0.5,
                                                1 / (1 + std::exp(-1.5))});
  expectNear(vals(run1(OpKind::Gelu, {x})), {-0.04550026, -0.15426877, 0, 1.39978920});
  expectNear(vals(run1(OpKind::Gelu, {x}, {{"approximate", std::string("tanh")}})),
             {-0.04540231, -0.15428599, 0, 1.39957158});
  expectNear(vals(run1(OpKind::Silu, {x})), {-0.23840584, -0.18877033, 0, 1.22636171});
  expectNear(vals(run1(OpKind::Rsqrt, {F({2}, {4, 0.25})})), {0.5, 2});
  expectNear(vals(run1(OpKind::Clip, {x}, {{"min", -1.0}, {"max", 1.0}})), {-1, -0.5, 0, 1});
  expectNear(vals(run1(OpKind::Sign, {x})), {-1, -1, 0, 1});
}

TEST(KernelUnary, IntegerAndBool) {
  const int64_t big = (int64_t(1) << 62) + 1;
  EXPECT_EQ(ints(run1(OpKind::Neg, {I({2}, {big, -3})})), (std::vector<int64_t>{-big, 3}));
  EXPECT_EQ(ints(run1(OpKind::Abs, {I({2}, {-big, 3})})), (std::vector<int64_t>{big, 3}));
  EXPECT_EQ(ints(run1(OpKind::Clip, {I({3}, {-big, 5, big})}, {{"min", -4.0}, {"max", 4.0}})),
            (std::vector<int64_t>{-4, 4, 4}));
  Tensor b = I({3}, {1, 0, 1}, DType::Bool);
  expectNear(vals(run1(OpKind::Not, {b})), {0, 1, 0});
}

TEST(KernelUnary, HalfRoundsOnStore) {
  // 1/3 in f16 is 0x3555 (0.333251953125); bf16 is 0x3EAB (0.333984375).
  Tensor h = run1(OpKind::Reciprocal, {F({1}, {3}, DType::F16)});
  EXPECT_EQ(h.dtype(), DType::F16);
  EXPECT_EQ(h.data<uint16_t>()[0], 0x3555);
  Tensor b = run1(OpKind::Reciprocal, {F({1}, {3}, DType::BF16)});
  EXPECT_EQ(b.data<uint16_t>()[0], 0x3EAB);
}

TEST(KernelCast, TypedConversions) {
  const int64_t big = (int64_t(1) << 60) + 7;
  Tensor c = run1(OpKind::Cast, {I({1}, {big})}, {{"to", DType::I32}});
  EXPECT_EQ(c.data<int32_t>()[0], int32_t(uint32_t(uint64_t(big))));
  Tensor f = run1(OpKind::Cast, {F({3}, {-2.7f, 2.7f, NAN})}, {{"to", DType::I64}});
  EXPECT_EQ(ints(f), (std::vector<int64_t>{-2, 2, 0}));
  Tensor bo = run1(OpKind::Cast, {F({2}, {0.5f, 0})}, {{"to", DType::Bool}});
  expectNear(vals(bo), {1, 0});
  Tensor h = run1(OpKind::Cast, {F({1}, {1.0f / 3})}, {{"to", DType::F16}});
  EXPECT_EQ(h.data<uint16_t>()[0], 0x3555);
}

TEST(KernelBinary, Broadcasting) {
  Tensor a = F({2, 1, 3}, {1, 2, 3, 4, 5, 6});
  Tensor b = F({2, 1}, {10, 20});
  Tensor y = run1(OpKind::Add, {a, b});
  EXPECT_EQ(y.dims(), (std::vector<int64_t>{2, 2, 3}));
  expectNear(vals(y), {11, 12, 13, 21, 22, 23, 14, 15, 16, 24, 25, 26});
  expectNear(vals(run1(OpKind::Sub, {F({}, {1}), F({3}, {1, 2, 3})})), {0, -1, -2});
}

TEST(KernelBinary, LargeBroadcastMatchesReference) {
  // Exercises the threaded path and run splitting across rows.
  const int64_t r = 300, c = 257;
  std::vector<float> av(static_cast<size_t>(r * c)), bv(static_cast<size_t>(c));
  for (int64_t i = 0; i < r * c; ++i) av[size_t(i)] = float(i % 97) * 0.5f;
  for (int64_t j = 0; j < c; ++j) bv[size_t(j)] = float(j);
  Tensor y = run1(OpKind::Mul, {F({r, c}, av), F({c}, bv)});
  for (int64_t i = 0; i < r * c; i += 1013)
    EXPECT_EQ(y.data<float>()[i], av[size_t(i)] * bv[size_t(i % c)]);
  Tensor t = run1(OpKind::Add, {F({r, 1}, std::vector<float>(size_t(r), 1.0f)), F({1, c}, bv)});
  EXPECT_EQ(t.data<float>()[5 * c + 7], 8.0f);
}

TEST(KernelBinary, IntegerExactness) {
  const int64_t big = (int64_t(1) << 62) + 3;
  EXPECT_EQ(ints(run1(OpKind::Add, {I({1}, {big}), I({1}, {1})})), std::vector<int64_t>{big + 1});
  EXPECT_EQ(ints(run1(OpKind::Mul, {I({1}, {big / 4}), I({1}, {3})})), std::vector<int64_t>{(big / 4) * 3});
  EXPECT_EQ(ints(run1(OpKind::Div, {I({4}, {7, -7, 7, -7}), I({4}, {2, 2, -2, -2})})),
            (std::vector<int64_t>{3, -3, -3, 3}));
  EXPECT_EQ(ints(run1(OpKind::Mod, {I({4}, {7, -7, 7, -7}), I({4}, {3, 3, -3, -3})})),
            (std::vector<int64_t>{1, 2, -2, -1}));
  EXPECT_EQ(ints(run1(OpKind::Mod, {I({4}, {7, -7, 7, -7}), I({4}, {3, 3, -3, -3})}, {{"fmod", int64_t(1)}})),
            (std::vector<int64_t>{1, -1, 1, -1}));
  EXPECT_EQ(ints(run1(OpKind::Pow, {I({2}, {3, 2}), I({2}, {3, 61})})),
            (std::vector<int64_t>{27, int64_t(1) << 61}));
  EXPECT_EQ(runErr(OpKind::Div, {I({1}, {1}), I({1}, {0})}), "division-by-zero: div: integer division by zero");
}

TEST(KernelBinary, FloatModPowCompare) {
  expectNear(vals(run1(OpKind::Mod, {F({2}, {-7, 7}), F({2}, {3, -3})}, {{"fmod", int64_t(1)}})), {-1, 1});
  expectNear(vals(run1(OpKind::Pow, {F({2}, {2, 9}), I({2}, {3, 0})})), {8, 1});
  Tensor lt = run1(OpKind::Lt, {F({3}, {1, 2, 3}), F({}, {2})});
  EXPECT_EQ(lt.dtype(), DType::Bool);
  expectNear(vals(lt), {1, 0, 0});
  expectNear(vals(run1(OpKind::Xor, {I({2}, {1, 1}, DType::Bool), I({2}, {0, 1}, DType::Bool)})), {1, 0});
  Tensor mx = run1(OpKind::Max, {F({2}, {1, NAN}), F({2}, {2, 0})});
  EXPECT_EQ(mx.data<float>()[0], 2.0f);
  EXPECT_TRUE(std::isnan(mx.data<float>()[1]));
}

TEST(KernelWhere, BroadcastsAndKeepsDType) {
  Tensor c = I({2, 1}, {1, 0}, DType::Bool);
  Tensor y = run1(OpKind::Where, {c, I({3}, {1, 2, 3}), I({}, {-1})});
  EXPECT_EQ(y.dims(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(ints(y), (std::vector<int64_t>{1, 2, 3, -1, -1, -1}));
}

TEST(KernelLinalg, MatMulBatchedAndVectors) {
  Tensor a = F({2, 2, 3}, {1, 2, 3, 4, 5, 6, 1, 0, 0, 0, 1, 0});
  Tensor b = F({3, 2}, {1, 2, 3, 4, 5, 6});
  expectNear(vals(run1(OpKind::MatMul, {a, b})), {22, 28, 49, 64, 1, 2, 3, 4});
  Tensor bb = F({2, 3, 1}, {1, 1, 1, 2, 2, 2});
  expectNear(vals(run1(OpKind::MatMul, {a, bb})), {6, 15, 2, 2});
  Tensor v = run1(OpKind::MatMul, {F({3}, {1, 2, 3}), F({3}, {4, 5, 6})});
  EXPECT_TRUE(v.dims().empty());
  expectNear(vals(v), {32});
  Tensor ad = run1(OpKind::MatMul, {a.castTo(DType::F64), b.castTo(DType::F64)});
  EXPECT_EQ(ad.dtype(), DType::F64);
  expectNear(vals(ad), {22, 28, 49, 64, 1, 2, 3, 4});
  // Broadcast batch on the left: [2,1,2,2] @ [3,2,2] -> [2,3,2,2].
  Tensor l = F({2, 1, 1, 2}, {1, 0, 0, 1});
  Tensor r = F({3, 2, 1}, {1, 2, 3, 4, 5, 6});
  Tensor y = run1(OpKind::MatMul, {l, r});
  EXPECT_EQ(y.dims(), (std::vector<int64_t>{2, 3, 1, 1}));
  expectNear(vals(y), {1, 3, 5, 2, 4, 6});
}

TEST(KernelLinalg, IntegerMatMulIsExact) {
  const int64_t big = int64_t(1) << 31;  // product exceeds 2^53
  Tensor y = run1(OpKind::MatMul, {I({1, 2}, {big, 3}), I({2, 1}, {big + 1, 5})});
  EXPECT_EQ(ints(y), std::vector<int64_t>{big * (big + 1) + 15});
}

TEST(KernelLinalg, GemmTransposesAlphaBeta) {
  Tensor a = F({3, 2}, {1, 4, 2, 5, 3, 6});  // A^T = [[1,2,3],[4,5,6]]
  Tensor b = F({2, 3}, {1, 3, 5, 2, 4, 6});  // B^T = [[1,2],[3,4],[5,6]]
  Tensor c = F({2}, {1, -1});
  AttrMap at{{"trans_a", int64_t(1)}, {"trans_b", int64_t(1)}, {"alpha", 2.0}, {"beta", 3.0}};
  expectNear(vals(run1(OpKind::Gemm, {a, b, c}, at)), {2 * 22 + 3, 2 * 28 - 3, 2 * 49 + 3, 2 * 64 - 3});
  Tensor h = run1(OpKind::Gemm, {a.castTo(DType::BF16), b.castTo(DType::BF16)}, at);
  EXPECT_EQ(h.dtype(), DType::BF16);
  expectNear(vals(h), {44, 56, 98, 128});
}

TEST(KernelReduce, SumMeanMaxProd) {
  Tensor x = F({2, 3}, {1, 2, 3, 4, 5, 6});
  expectNear(vals(run1(OpKind::ReduceSum, {x}, {{"axes", std::vector<int64_t>{1}}})), {6, 15});
  expectNear(vals(run1(OpKind::ReduceMean, {x}, {{"axes", std::vector<int64_t>{0}}})), {2.5, 3.5, 4.5});
  Tensor all = run1(OpKind::ReduceMax, {x}, {{"keepdims", int64_t(0)}});
  EXPECT_TRUE(all.dims().empty());
  expectNear(vals(all), {6});
  expectNear(vals(run1(OpKind::ReduceProd, {x}, {{"axes", std::vector<int64_t>{-1}}})), {6, 120});
  expectNear(vals(run1(OpKind::ReduceMin, {x}, {{"axes", std::vector<int64_t>{0}}})), {1, 2, 3});
  const int64_t big = (int64_t(1) << 62) + 1;
  EXPECT_EQ(ints(run1(OpKind::ReduceSum, {I({3}, {big, -big, 5})})), std::vector<int64_t>{5});
}

TEST(KernelReduce, ArgMaxTiesAndLastIndex) {
  Tensor x = F({2, 3}, {1, 3, 3, 2, 2, 0});
  EXPECT_EQ(ints(run1(OpKind::ArgMax, {x}, {{"axis", int64_t(1)}})), (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(ints(run1(OpKind::ArgMax, {x}, {{"axis", int64_t(1)}, {"select_last_index", int64_t(1)}})),
            (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(ints(run1(OpKind::ArgMin, {x}, {{"axis", int64_t(0)}})), (std::vector<int64_t>{0, 1, 1}));
}

TEST(KernelNorm, SoftmaxLogSoftmax) {
  Tensor x = F({2, 3}, {1, 2, 3, 1000, 1000, 1000});
  double z = std::exp(1.0) + std::exp(2.0) + std::exp(3.0);
  expectNear(vals(run1(OpKind::Softmax, {x})),
             {std::exp(1.0) / z, std::exp(2.0) / z, std::exp(3.0) / z, 1 / 3.0, 1 / 3.0, 1 / 3.0});
  expectNear(vals(run1(OpKind::LogSoftmax, {x})),
             {1 - std::log(z), 2 - std::log(z), 3 - std::log(z), -std::log(3.0), -std::log(3.0), -std::log(3.0)},
             1e-5);
  Tensor col = run1(OpKind::Softmax, {F({2, 2}, {0, 0, 1, 1})}, {{"axis", int64_t(0)}});
  double p = 1 / (1 + std::exp(1.0));
  expectNear(vals(col), {p, p, 1 - p, 1 - p});
}

TEST(KernelNorm, LayerNormAndRmsNorm) {
  Tensor x = F({2, 4}, {1, 2, 3, 4, 2, 2, 2, 2});
  Tensor s = F({4}, {1, 2, 1, 1}), b = F({4}, {0, 0, 0, 1});
  double inv = 1 / std::sqrt(1.25 + 1e-5);
  expectNear(vals(run1(OpKind::LayerNorm, {x, s, b})),
             {-1.5 * inv, -0.5 * inv * 2, 0.5 * inv, 1.5 * inv + 1, 0, 0, 0, 1}, 1e-5);
  double rms = std::sqrt(7.5 + 1e-6);
  expectNear(vals(run1(OpKind::RmsNorm, {x, s})),
             {1 / rms, 4 / rms, 3 / rms, 4 / rms, 2 / std::sqrt(4 + 1e-6), 4 / std::sqrt(4 + 1e-6),
              2 / std::sqrt(4 + 1e-6), 2 / std::sqrt(4 + 1e-6)},
             1e-5);
}

TEST(KernelLayout, TransposeSliceConcatSplit) {
  Tensor x = F({2, 3}, {0, 1, 2, 3, 4, 5});
  expectNear(vals(run1(OpKind::Transpose, {x}, {{"perm", std::vector<int64_t>{1, 0}}})), {0, 3, 1, 4, 2, 5});
  const int64_t kEnd = std::numeric_limits<int64_t>::max();
  AttrMap rev{{"starts", std::vector<int64_t>{-1}}, {"ends", std::vector<int64_t>{std::numeric_limits<int64_t>::min()}},
              {"axes", std::vector<int64_t>{1}}, {"steps", std::vector<int64_t>{-2}}};
  expectNear(vals(run1(OpKind::Slice, {x}, rev)), {2, 0, 5, 3});
  AttrMap tail{{"starts", std::vector<int64_t>{1, 1}}, {"ends", std::vector<int64_t>{kEnd, 100}}};
  expectNear(vals(run1(OpKind::Slice, {x}, tail)), {4, 5});
  Tensor c = run1(OpKind::Concat, {x, F({2, 1}, {9, 9})}, {{"axis", int64_t(1)}});
  expectNear(vals(c), {0, 1, 2, 9, 3, 4, 5, 9});
  auto parts = run(OpKind::Split, {c}, {{"axis", int64_t(1)}, {"sizes", std::vector<int64_t>{1, 3}}});
  ASSERT_EQ(parts.size(), 2u);
  expectNear(vals(parts[0]), {0, 3});
  expectNear(vals(parts[1]), {1, 2, 9, 4, 5, 9});
  Tensor e = run1(OpKind::Expand, {F({2, 1}, {1, 2})}, {{"shape", Shape{2, 2, 3}}});
  expectNear(vals(e), {1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2});
  Tensor u = run1(OpKind::Unsqueeze, {x}, {{"axes", std::vector<int64_t>{0}}});
  EXPECT_EQ(u.dims(), (std::vector<int64_t>{1, 2, 3}));
}

TEST(KernelIndex, GatherWrapsNegativeIndices) {
  Tensor x = F({3, 2}, {0, 1, 2, 3, 4, 5});
  expectNear(vals(run1(OpKind::Gather, {x, I({2}, {-1, 0})})), {4, 5, 0, 1});
  expectNear(vals(run1(OpKind::Gather, {x, I({1, 1}, {1}, DType::I32)}, {{"axis", int64_t(1)}})), {1, 3, 5});
  EXPECT_EQ(runErr(OpKind::Gather, {x, I({1}, {3})}), "index-out-of-range: index 3 is out of range for dim 3");
}

TEST(KernelIndex, GatherScatterElements) {
  Tensor x = F({2, 2}, {1, 2, 3, 4});
  expectNear(vals(run1(OpKind::GatherElements, {x, I({2, 2}, {0, 0, 1, 0})}, {{"axis", int64_t(1)}})), {1, 1, 4, 3});
  Tensor d = F({1, 5}, {1, 2, 3, 4, 5});
  Tensor y = run1(OpKind::ScatterElements, {d, I({1, 2}, {1, 1}), F({1, 2}, {1.1f, 2.1f})},
                  {{"axis", int64_t(1)}, {"reduction", std::string("add")}});
  expectNear(vals(y), {1, 5.2, 3, 4, 5}, 1e-5);
  Tensor z = run1(OpKind::ScatterElements, {d, I({1, 2}, {-1, 0}), F({1, 2}, {9, 8})}, {{"axis", int64_t(1)}});
  expectNear(vals(z), {8, 2, 3, 4, 9});
}

TEST(KernelIndex, Trilu) {
  Tensor x = F({3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  expectNear(vals(run1(OpKind::Trilu, {x})), {1, 2, 3, 0, 5, 6, 0, 0, 9});
  expectNear(vals(run1(OpKind::Trilu, {x}, {{"upper", int64_t(0)}, {"k", int64_t(-1)}})), {0, 0, 0, 4, 0, 0, 7, 8, 0});
}

TEST(KernelSources, RangeAndConstant) {
  EXPECT_EQ(ints(run1(OpKind::Range, {}, {{"start", 5.0}, {"limit", -4.0}, {"delta", -3.0}})),
            (std::vector<int64_t>{5, 2, -1}));
  expectNear(vals(run1(OpKind::Range, {}, {{"start", 0.0}, {"limit", 1.0}, {"delta", 0.25}, {"dtype", DType::F32}})),
             {0, 0.25, 0.5, 0.75});
  Tensor v = I({2}, {7, 8});
  EXPECT_TRUE(run1(OpKind::Constant, {}, {{"value", v}}).identical(v));
}

TEST(KernelSelection, TopKTiesPreferLowerIndex) {
  Tensor x = F({1, 5}, {3, 5, 3, 5, 1});
  auto out = run(OpKind::TopK, {x}, {{"k", int64_t(3)}});
  ASSERT_EQ(out.size(), 2u);
  expectNear(vals(out[0]), {5, 5, 3});
  EXPECT_EQ(ints(out[1]), (std::vector<int64_t>{1, 3, 0}));
  auto small = run(OpKind::TopK, {x}, {{"k", int64_t(2)}, {"largest", int64_t(0)}});
  EXPECT_EQ(ints(small[1]), (std::vector<int64_t>{4, 0}));
  auto col = run(OpKind::TopK, {F({3, 2}, {1, 6, 3, 5, 2, 4})}, {{"k", int64_t(1)}, {"axis", int64_t(0)}});
  expectNear(vals(col[0]), {3, 6});
  EXPECT_EQ(ints(col[1]), (std::vector<int64_t>{1, 0}));
}

TEST(KernelSelection, OneHot) {
  Tensor y = run1(OpKind::OneHot, {I({3}, {0, -1, 7})}, {{"depth", int64_t(3)}, {"on", 5.0}, {"off", -1.0}});
  expectNear(vals(y), {5, -1, -1, -1, -1, 5, -1, -1, -1});
  Tensor t = run1(OpKind::OneHot, {I({2}, {1, 0})}, {{"depth", int64_t(2)}, {"axis", int64_t(0)}});
  expectNear(vals(t), {0, 1, 1, 0});
}

TEST(KernelLoss, CrossEntropyWithIgnoreIndexAndWeights) {
  Tensor logits = F({3, 2}, {0, 0, 1, 2, 3, 1});
  Tensor target = I({3}, {0, 1, -100});
  double l0 = std::log(2.0), l1 = std::log(1 + std::exp(-1.0));
  expectNear(vals(run1(OpKind::CrossEntropy, {logits, target})), {(l0 + l1) / 2}, 1e-6);
  expectNear(vals(run1(OpKind::CrossEntropy, {logits, target}, {{"reduction", std::string("none")}})),
             {l0, l1, 0}, 1e-6);
  Tensor w = F({2}, {1, 3});
  expectNear(vals(run1(OpKind::CrossEntropy, {logits, target, w})), {(l0 + 3 * l1) / 4}, 1e-6);
  expectNear(vals(run1(OpKind::CrossEntropy, {logits, target, w}, {{"reduction", std::string("sum")}})),
             {l0 + 3 * l1}, 1e-6);
  EXPECT_EQ(runErr(OpKind::CrossEntropy, {logits, I({3}, {0, 2, 0})}),
            "index-out-of-range: cross_entropy: target 2 is out of range for 2 classes");
}

// Reductions split over the leading kept dims (and threads) still add each
// output's elements in row-major order, in f64: bitwise a serial sum.
TEST(KernelReduce, SplitReductionsMatchASerialRowMajorSum) {
  std::vector<int64_t> dims{48, 700, 5};
  std::vector<float> v(size_t(48 * 700 * 5));
  for (size_t i = 0; i < v.size(); ++i) v[i] = float(std::sin(double(i) * 0.37)) * 1000.0f + float(i % 7) * 1e-3f;
  Tensor x = F(dims, v);
  for (std::vector<int64_t> axes : {std::vector<int64_t>{1}, {2}, {0, 2}, {1, 2}}) {
    std::vector<int64_t> keep = dims;
    for (int64_t a : axes) keep[size_t(a)] = 1;
    std::vector<double> sum(size_t(keep[0] * keep[1] * keep[2]), 0.0);
    std::vector<float> mx(sum.size(), -INFINITY);
    for (int64_t i = 0; i < dims[0]; ++i)
      for (int64_t j = 0; j < dims[1]; ++j)
        for (int64_t k = 0; k < dims[2]; ++k) {
          int64_t o = ((keep[0] > 1 ? i : 0) * keep[1] + (keep[1] > 1 ? j : 0)) * keep[2] + (keep[2] > 1 ? k : 0);
          float e = v[size_t((i * dims[1] + j) * dims[2] + k)];
          sum[size_t(o)] += double(e);
          mx[size_t(o)] = std::max(mx[size_t(o)], e);
        }
    Tensor s = run1(OpKind::ReduceSum, {x}, {{"axes", axes}});
    Tensor m = run1(OpKind::ReduceMax, {x}, {{"axes", axes}});
    ASSERT_EQ(s.numel(), int64_t(sum.size()));
    for (size_t o = 0; o < sum.size(); ++o) {
      ASSERT_EQ(s.data<float>()[o], float(sum[o])) << "axes " << axes.size() << " output " << o;
      ASSERT_EQ(m.data<float>()[o], mx[o]) << "axes " << axes.size() << " output " << o;
    }
  }
}

TEST(KernelRandom, Dropout) {
  Tensor x = F({4}, {1, 2, 3, 4});
  Tensor s = F({4}, {0.1f, 0.5f, 0.9f, 0.49f});
  auto out = run(OpKind::Dropout, {x, s}, {{"ratio", 0.5}});
  ASSERT_EQ(out.size(), 2u);
  expectNear(vals(out[0]), {0, 4, 6, 0});
  expectNear(vals(out[1]), {0, 1, 1, 0});
  auto keep = run(OpKind::Dropout, {x, s}, {{"ratio", 0.0}});
  EXPECT_TRUE(keep[0].identical(x));
  expectNear(vals(keep[1]), {1, 1, 1, 1});
}

}  // namespace
}  // namespace sp::ir

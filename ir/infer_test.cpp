#include <gtest/gtest.h>

#include <limits>

#include "ir/op.h"

namespace sp::ir {
namespace {

Dim S(const char* name) { return Dim::sym(name); }
TensorType F32(Shape s) { return {DType::F32, std::move(s)}; }
TensorType I64(Shape s) { return {DType::I64, std::move(s)}; }
TensorType Bool(Shape s) { return {DType::Bool, std::move(s)}; }

Result<std::vector<TensorType>> infer(OpKind op, std::vector<TensorType> in, AttrMap attrs = {},
                                      const GroupSizeFn* g = nullptr) {
  auto a = completeAttrs(op, std::move(attrs));
  if (!a) return a.error();
  InferCtx ctx{op, *a, in, g};
  return opInfo(op).infer(ctx);
}

// The single output type, or a failing test.
TensorType one(const Result<std::vector<TensorType>>& r) {
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().str());
  if (!r.ok() || r->size() != 1) return {};
  return (*r)[0];
}

std::string err(const Result<std::vector<TensorType>>& r) {
  EXPECT_FALSE(r.ok());
  return r.ok() ? "" : r.error().id + ": " + r.error().message;
}

TEST(InferUnary, KeepsTypeAndChecksDType) {
  EXPECT_EQ(one(infer(OpKind::Exp, {F32({2, S("seq")})})), F32({2, S("seq")}));
  EXPECT_EQ(one(infer(OpKind::Neg, {I64({3})})), I64({3}));
  EXPECT_EQ(one(infer(OpKind::Not, {Bool({3})})), Bool({3}));
  EXPECT_EQ(err(infer(OpKind::Exp, {I64({3})})), "dtype-mismatch: input must be a float type, got i64");
  EXPECT_EQ(err(infer(OpKind::Not, {F32({3})})), "dtype-mismatch: input must be bool, got f32");
  EXPECT_EQ(err(infer(OpKind::Relu, {Bool({3})})), "dtype-mismatch: input must be numeric, got bool");
  EXPECT_EQ(err(infer(OpKind::Gelu, {F32({3})}, {{"approximate", std::string("fast")}})),
            "bad-attr: approximate must be 'none' or 'tanh', got 'fast'");
  EXPECT_EQ(one(infer(OpKind::Cast, {F32({3})}, {{"to", DType::BF16}})), (TensorType{DType::BF16, {3}}));
  EXPECT_EQ(err(infer(OpKind::Trilu, {F32({3})})), "bad-rank: input must have rank >= 2, got f32[3]");
  EXPECT_EQ(err(infer(OpKind::Softmax, {F32({3, 4})}, {{"axis", int64_t(2)}})),
            "bad-axis: softmax: axis 2 is out of range for rank 2");
}

TEST(InferBinary, Broadcasting) {
  EXPECT_EQ(one(infer(OpKind::Add, {F32({2, 1, 4}), F32({3, 1})})), F32({2, 3, 4}));
  EXPECT_EQ(one(infer(OpKind::Mul, {F32({S("b"), S("seq"), 8}), F32({8})})), F32({S("b"), S("seq"), 8}));
  EXPECT_EQ(one(infer(OpKind::Sub, {F32({S("seq"), 1}), F32({1, S("seq")})})), F32({S("seq"), S("seq")}));
  EXPECT_EQ(one(infer(OpKind::Add, {F32({}), F32({5})})), F32({5}));
  EXPECT_EQ(err(infer(OpKind::Add, {F32({2, 3}), F32({4})})),
            "shape-mismatch: cannot broadcast [2, 3] with [4]");
  EXPECT_EQ(err(infer(OpKind::Add, {F32({S("a")}), F32({S("b")})})),
            "shape-mismatch: cannot broadcast [a] with [b]");
  EXPECT_EQ(err(infer(OpKind::Add, {F32({2}), I64({2})})),
            "dtype-mismatch: operands have different dtypes f32 and i64");
}

TEST(InferBinary, PowModAndCompare) {
  EXPECT_EQ(one(infer(OpKind::Pow, {F32({2}), I64({2})})), F32({2}));
  EXPECT_EQ(err(infer(OpKind::Mod, {F32({2}), F32({2})})), "bad-attr: fmod must be 1 for float operands");
  EXPECT_EQ(one(infer(OpKind::Mod, {I64({2}), I64({2})})), I64({2}));
  EXPECT_EQ(one(infer(OpKind::Lt, {F32({2, 3}), F32({3})})), Bool({2, 3}));
  EXPECT_EQ(one(infer(OpKind::Eq, {Bool({2}), Bool({2})})), Bool({2}));
  EXPECT_EQ(err(infer(OpKind::And, {F32({2}), F32({2})})), "dtype-mismatch: operands must be bool, got f32");
  EXPECT_EQ(err(infer(OpKind::Lt, {Bool({2}), Bool({2})})), "dtype-mismatch: operands must be numeric, got bool");
}

TEST(InferWhere, BroadcastsAllThree) {
  EXPECT_EQ(one(infer(OpKind::Where, {Bool({2, 1}), F32({3}), F32({1, 1})})), F32({2, 3}));
  EXPECT_EQ(err(infer(OpKind::Where, {F32({2}), F32({2}), F32({2})})),
            "dtype-mismatch: condition must be bool, got f32");
  EXPECT_EQ(err(infer(OpKind::Where, {Bool({2}), F32({2}), I64({2})})),
            "dtype-mismatch: branches have different dtypes f32 and i64");
}

TEST(InferLinear, MatMul) {
  EXPECT_EQ(one(infer(OpKind::MatMul, {F32({S("b"), S("s"), 64}), F32({64, 128})})),
            F32({S("b"), S("s"), 128}));
  EXPECT_EQ(one(infer(OpKind::MatMul, {F32({4}), F32({4})})), F32({}));
  EXPECT_EQ(one(infer(OpKind::MatMul, {F32({4}), F32({2, 4, 5})})), F32({2, 5}));
  EXPECT_EQ(one(infer(OpKind::MatMul, {F32({2, 3, 4}), F32({4})})), F32({2, 3}));
  EXPECT_EQ(one(infer(OpKind::MatMul, {F32({2, 1, 3, 4}), F32({5, 4, 6})})), F32({2, 5, 3, 6}));
  EXPECT_EQ(err(infer(OpKind::MatMul, {F32({3, 4}), F32({5, 6})})),
            "shape-mismatch: contraction dims differ: f32[3, 4] @ f32[5, 6]");
  EXPECT_EQ(err(infer(OpKind::MatMul, {F32({}), F32({5})})),
            "bad-rank: operands must have rank >= 1, got f32[] and f32[5]");
}

TEST(InferLinear, Gemm) {
  AttrMap t{{"trans_a", int64_t(1)}, {"trans_b", int64_t(1)}};
  EXPECT_EQ(one(infer(OpKind::Gemm, {F32({4, 3}), F32({5, 4}), F32({5})}, t)), F32({3, 5}));
  EXPECT_EQ(one(infer(OpKind::Gemm, {F32({3, 4}), F32({4, 5})})), F32({3, 5}));
  EXPECT_EQ(err(infer(OpKind::Gemm, {F32({3, 4}), F32({4, 5}), F32({2, 5})})),
            "shape-mismatch: C f32[2, 5] is not broadcastable to [3, 5]");
  EXPECT_EQ(err(infer(OpKind::Gemm, {F32({3, 4}), F32({3, 5})})),
            "shape-mismatch: contraction dims differ: 4 and 3 (A f32[3, 4], B f32[3, 5])");
}

TEST(InferReduce, AxesAndKeepdims) {
  EXPECT_EQ(one(infer(OpKind::ReduceSum, {F32({2, S("s"), 4})}, {{"axes", std::vector<int64_t>{-1}}})),
            F32({2, S("s"), 1}));
  EXPECT_EQ(one(infer(OpKind::ReduceMean, {F32({2, 3, 4})},
                      {{"axes", std::vector<int64_t>{0, 2}}, {"keepdims", int64_t(0)}})),
            F32({3}));
  EXPECT_EQ(one(infer(OpKind::ReduceMax, {F32({2, 3})}, {{"keepdims", int64_t(0)}})), F32({}));
  EXPECT_EQ(err(infer(OpKind::ReduceSum, {F32({2, 3})}, {{"axes", std::vector<int64_t>{2}}})),
            "bad-axis: axis 2 is out of range for rank 2");
  EXPECT_EQ(err(infer(OpKind::ReduceSum, {F32({2, 3})}, {{"axes", std::vector<int64_t>{1, -1}}})),
            "bad-axis: axis -1 is repeated in [1, -1]");
  EXPECT_EQ(one(infer(OpKind::ArgMax, {F32({2, 3})}, {{"axis", int64_t(1)}, {"keepdims", int64_t(0)}})),
            I64({2}));
}

TEST(InferNorm, ScaleAndBias) {
  EXPECT_EQ(one(infer(OpKind::LayerNorm, {F32({2, S("s"), 8}), F32({8}), F32({8})})), F32({2, S("s"), 8}));
  EXPECT_EQ(one(infer(OpKind::RmsNorm, {F32({2, 4, 8}), F32({4, 8})}, {{"axis", int64_t(1)}})),
            F32({2, 4, 8}));
  EXPECT_EQ(err(infer(OpKind::LayerNorm, {F32({2, 8}), F32({7})})),
            "shape-mismatch: scale f32[7] does not broadcast to the normalized shape [8]");
  EXPECT_EQ(err(infer(OpKind::LayerNorm, {F32({2, 8}), F32({2, 8})})),
            "shape-mismatch: scale f32[2, 8] does not broadcast to the normalized shape [8]");
}

TEST(InferLayout, ReshapeTranspose) {
  Shape bs{S("b") * S("s"), 64};
  EXPECT_EQ(one(infer(OpKind::Reshape, {F32({S("b"), S("s"), 64})}, {{"shape", bs}})), F32(bs));
  EXPECT_EQ(err(infer(OpKind::Reshape, {F32({2, 3})}, {{"shape", Shape{5}}})),
            "shape-mismatch: cannot reshape f32[2, 3] to [5]: element counts differ");
  EXPECT_EQ(err(infer(OpKind::Reshape, {F32({S("s"), 4})}, {{"shape", Shape{4, S("b")}}})),
            "shape-mismatch: cannot reshape f32[s, 4] to [4, b]: element counts differ");
  EXPECT_EQ(one(infer(OpKind::Transpose, {F32({2, S("s"), 4})}, {{"perm", std::vector<int64_t>{2, 0, 1}}})),
            F32({4, 2, S("s")}));
  EXPECT_EQ(err(infer(OpKind::Transpose, {F32({2, 3})}, {{"perm", std::vector<int64_t>{0, 0}}})),
            "bad-attr: perm [0, 0] is not a permutation of rank 2");
}

TEST(InferLayout, Slice) {
  auto sl = [](std::vector<int64_t> st, std::vector<int64_t> en, std::vector<int64_t> ax,
               std::vector<int64_t> stp) {
    return AttrMap{{"starts", st}, {"ends", en}, {"axes", ax}, {"steps", stp}};
  };
  const int64_t kEnd = std::numeric_limits<int64_t>::max();
  const int64_t kMin = std::numeric_limits<int64_t>::min();
  EXPECT_EQ(one(infer(OpKind::Slice, {F32({10, 4})}, sl({1}, {-1}, {}, {}))), F32({8, 4}));
  EXPECT_EQ(one(infer(OpKind::Slice, {F32({10, 4})}, sl({0}, {kEnd}, {1}, {2}))), F32({10, 2}));
  EXPECT_EQ(one(infer(OpKind::Slice, {F32({10})}, sl({-1}, {kMin}, {}, {-1}))), F32({10}));
  EXPECT_EQ(one(infer(OpKind::Slice, {F32({10})}, sl({20}, {30}, {}, {}))), F32({0}));
  EXPECT_EQ(one(infer(OpKind::Slice, {F32({10})}, sl({8}, {1}, {}, {-3}))), F32({3}));
  EXPECT_EQ(one(infer(OpKind::Slice, {F32({S("s"), 8})}, sl({0, 2}, {kEnd, 6}, {}, {}))), F32({S("s"), 4}));
  EXPECT_EQ(one(infer(OpKind::Slice, {F32({Dim(4) * S("s")})}, sl({0}, {kEnd}, {}, {2}))),
            F32({Dim(2) * S("s")}));
  EXPECT_EQ(err(infer(OpKind::Slice, {F32({S("s")})}, sl({0}, {5}, {}, {}))),
            "symbolic-dim: slice of symbolic dim s with start 0, end 5, step 1 has no determinable size");
  EXPECT_EQ(err(infer(OpKind::Slice, {F32({4})}, sl({0}, {5}, {}, {0}))), "bad-attr: slice step must not be 0");
  EXPECT_EQ(err(infer(OpKind::Slice, {F32({4})}, sl({0}, {5, 6}, {}, {}))),
            "bad-attr: starts, ends, axes and steps have different lengths 1, 2, 1, 1");
}

TEST(InferLayout, ConcatSplitExpand) {
  EXPECT_EQ(one(infer(OpKind::Concat, {F32({2, S("s")}), F32({2, Dim(2) * S("s")})}, {{"axis", int64_t(1)}})),
            F32({2, Dim(3) * S("s")}));
  EXPECT_EQ(one(infer(OpKind::Concat, {F32({2, 3}), F32({4, 3})}, {{"axis", int64_t(0)}})), F32({6, 3}));
  EXPECT_EQ(err(infer(OpKind::Concat, {F32({2, 3}), F32({2, 4})}, {{"axis", int64_t(0)}})),
            "shape-mismatch: input 1 f32[2, 4] does not match input 0 f32[2, 3] outside axis 0");
  EXPECT_EQ(err(infer(OpKind::Concat, {F32({S("s")}), F32({4})}, {{"axis", int64_t(0)}})),
            "symbolic-dim: cannot add dims s and 4 along axis 0");
  auto sp = infer(OpKind::Split, {F32({6, S("s")})}, {{"sizes", std::vector<int64_t>{2, 4}}});
  ASSERT_TRUE(sp.ok());
  ASSERT_EQ(sp->size(), 2u);
  EXPECT_EQ((*sp)[1], F32({4, S("s")}));
  EXPECT_EQ(err(infer(OpKind::Split, {F32({6})}, {{"sizes", std::vector<int64_t>{2, 3}}})),
            "shape-mismatch: split sizes [2, 3] sum to 5, not to dim 6 of axis 0");
  EXPECT_EQ(one(infer(OpKind::Expand, {F32({3, 1})}, {{"shape", Shape{2, 1, 4}}})), F32({2, 3, 4}));
  EXPECT_EQ(err(infer(OpKind::Expand, {F32({3})}, {{"shape", Shape{4}}})),
            "shape-mismatch: cannot expand f32[3] to [4]");
}

TEST(InferLayout, SqueezeUnsqueeze) {
  EXPECT_EQ(one(infer(OpKind::Squeeze, {F32({1, 3, 1})}, {{"axes", std::vector<int64_t>{-1}}})), F32({1, 3}));
  EXPECT_EQ(one(infer(OpKind::Squeeze, {F32({1, S("s"), 1})}, {{"axes", std::vector<int64_t>{}}})), F32({S("s")}));
  EXPECT_EQ(err(infer(OpKind::Squeeze, {F32({2, 3})}, {{"axes", std::vector<int64_t>{1}}})),
            "shape-mismatch: cannot squeeze axis 1 of size 3 in f32[2, 3]");
  EXPECT_EQ(one(infer(OpKind::Unsqueeze, {F32({3, 4})}, {{"axes", std::vector<int64_t>{0, -1}}})),
            F32({1, 3, 4, 1}));
  EXPECT_EQ(one(infer(OpKind::Unsqueeze, {F32({3, 4})}, {{"axes", std::vector<int64_t>{1}}})), F32({3, 1, 4}));
}

TEST(InferIndex, GatherScatter) {
  EXPECT_EQ(one(infer(OpKind::Gather, {F32({100, 64}), I64({S("b"), S("s")})})), F32({S("b"), S("s"), 64}));
  EXPECT_EQ(one(infer(OpKind::Gather, {F32({2, 5, 3}), I64({4})}, {{"axis", int64_t(1)}})), F32({2, 4, 3}));
  EXPECT_EQ(err(infer(OpKind::Gather, {F32({5}), F32({2})})),
            "dtype-mismatch: indices must be an integer type, got f32");
  EXPECT_EQ(one(infer(OpKind::GatherElements, {F32({3, 4}), I64({2, 4})})), F32({2, 4}));
  EXPECT_EQ(err(infer(OpKind::GatherElements, {F32({3, 4}), I64({2, 5})})),
            "shape-mismatch: indices i64[2, 5] exceed data f32[3, 4] on axis 1");
  EXPECT_EQ(one(infer(OpKind::ScatterElements, {F32({3, 4}), I64({2, 4}), F32({2, 4})},
                      {{"reduction", std::string("add")}})),
            F32({3, 4}));
  EXPECT_EQ(err(infer(OpKind::ScatterElements, {F32({3, 4}), I64({2, 4}), F32({2, 4})},
                      {{"reduction", std::string("mean")}})),
            "bad-attr: reduction must be none, add, mul, max or min, got 'mean'");
}

TEST(InferSources, ConstantRange) {
  AttrMap c{{"value", Tensor(DType::I64, {2, 3})}};
  EXPECT_EQ(one(infer(OpKind::Constant, {}, c)), I64({2, 3}));
  AttrMap r{{"start", 0.0}, {"limit", 10.0}, {"delta", 3.0}};
  EXPECT_EQ(one(infer(OpKind::Range, {}, r)), I64({4}));
  AttrMap neg{{"start", 10.0}, {"limit", 0.0}, {"delta", 1.0}, {"dtype", DType::F32}};
  EXPECT_EQ(one(infer(OpKind::Range, {}, neg)), F32({0}));
  AttrMap zero{{"start", 0.0}, {"limit", 1.0}, {"delta", 0.0}};
  EXPECT_EQ(err(infer(OpKind::Range, {}, zero)), "bad-attr: range delta must not be 0");
}

TEST(InferSelection, TopKOneHot) {
  auto t = infer(OpKind::TopK, {F32({2, 10})}, {{"k", int64_t(3)}});
  ASSERT_TRUE(t.ok());
  EXPECT_EQ((*t)[0], F32({2, 3}));
  EXPECT_EQ((*t)[1], I64({2, 3}));
  EXPECT_EQ(err(infer(OpKind::TopK, {F32({2, 10})}, {{"k", int64_t(11)}})),
            "bad-attr: k 11 is out of range for dim 10 of axis 1");
  EXPECT_EQ(one(infer(OpKind::OneHot, {I64({2, 3})}, {{"depth", int64_t(5)}})), F32({2, 3, 5}));
  EXPECT_EQ(one(infer(OpKind::OneHot, {I64({2, 3})}, {{"depth", int64_t(5)}, {"axis", int64_t(0)}})),
            F32({5, 2, 3}));
  EXPECT_EQ(err(infer(OpKind::OneHot, {I64({2})}, {{"depth", int64_t(0)}})),
            "bad-attr: depth must be positive, got 0");
}

TEST(InferLoss, CrossEntropyAndDropout) {
  EXPECT_EQ(one(infer(OpKind::CrossEntropy, {F32({S("n"), 10}), I64({S("n")})})), F32({}));
  EXPECT_EQ(one(infer(OpKind::CrossEntropy, {F32({4, 10, 7}), I64({4, 7}), F32({10})},
                      {{"reduction", std::string("none")}})),
            F32({4, 7}));
  EXPECT_EQ(err(infer(OpKind::CrossEntropy, {F32({4, 10}), I64({5})})),
            "shape-mismatch: target i64[5] does not match logits f32[4, 10] (expected [4])");
  EXPECT_EQ(err(infer(OpKind::CrossEntropy, {F32({4, 10}), F32({4})})),
            "dtype-mismatch: target must be an integer type, got f32");
  auto d = infer(OpKind::Dropout, {F32({2, 3}), F32({2, 3})}, {{"ratio", 0.1}});
  ASSERT_TRUE(d.ok());
  EXPECT_EQ((*d)[1], Bool({2, 3}));
  EXPECT_EQ(err(infer(OpKind::Dropout, {F32({2, 3}), F32({3})})),
            "shape-mismatch: random stream f32[3] must have the input's shape [2, 3]");
  EXPECT_EQ(err(infer(OpKind::Dropout, {F32({2}), F32({2})}, {{"ratio", 1.0}})),
            "bad-attr: ratio must be in [0, 1), got 1.000000");
}

TEST(InferCollective, GroupSizes) {
  GroupSizeFn g = [](const std::string& name) -> Result<int64_t> {
    if (name == "tp") return int64_t(4);
    return makeError("unknown-group", "unknown group '" + name + "'");
  };
  AttrMap tp{{"group", std::string("tp")}, {"dim", int64_t(1)}};
  EXPECT_EQ(one(infer(OpKind::AllGather, {F32({2, S("s")})}, tp, &g)), F32({2, Dim(4) * S("s")}));
  EXPECT_EQ(one(infer(OpKind::ReduceScatter, {F32({2, Dim(8) * S("s")})}, tp, &g)), F32({2, Dim(2) * S("s")}));
  EXPECT_EQ(err(infer(OpKind::ReduceScatter, {F32({2, 6})}, tp, &g)),
            "shape-mismatch: dim 1 of size 6 is not divisible by group size 4");
  EXPECT_EQ(err(infer(OpKind::AllGather, {F32({2, 6})}, tp, nullptr)),
            "no-group: collective outside a distributed program");
  EXPECT_EQ(err(infer(OpKind::AllGather, {F32({2})}, {{"group", std::string("dp")}}, &g)),
            "unknown-group: unknown group 'dp'");
  AttrMap a2a{{"group", std::string("tp")}, {"split_dim", int64_t(0)}, {"concat_dim", int64_t(1)}};
  EXPECT_EQ(one(infer(OpKind::AllToAll, {F32({8, 3})}, a2a, &g)), F32({2, 12}));
  EXPECT_EQ(err(infer(OpKind::AllReduce, {F32({2})}, {{"group", std::string("tp")}, {"reduce", std::string("prod")}}, &g)),
            "bad-attr: reduce must be sum, avg, max or min, got 'prod'");
  EXPECT_EQ(one(infer(OpKind::AllReduce, {F32({2})}, {{"group", std::string("tp")}}, &g)), F32({2}));
  auto s = infer(OpKind::Send, {F32({2})}, {{"peer", int64_t(1)}});
  ASSERT_TRUE(s.ok());
  EXPECT_TRUE(s->empty());
  EXPECT_EQ(one(infer(OpKind::Recv, {}, {{"peer", int64_t(0)}, {"dtype", DType::F16}, {"shape", Shape{2, S("s")}}})),
            (TensorType{DType::F16, {2, S("s")}}));
}

}  // namespace
}  // namespace sp::ir

#pragma once
// Tensor semantics of the collective ops, independent of any scheduler: the
// interpreter's rank scheduler and the reference executor's CPU backend both
// call these with the members' tensors in group order.
//   all_reduce(reduce):        every member gets reduce(x_0, ..., x_{g-1})
//   all_gather(dim):           every member gets concat(x_0, ..., x_{g-1}; dim)
//   reduce_scatter(dim, red.): member i gets chunk i of reduce(...) along dim
//   all_to_all(split, concat): member j gets concat_i(chunk j of x_i along
//                              split_dim; concat_dim)
//   broadcast(root):           every member gets x_root
// Reductions run in member order (x_0 + x_1) + x_2 ..., deterministically:
// f32 accumulates in f32, f64 in f64, f16/bf16 in f32 rounded once at the
// end, integers in 64-bit two's complement wrapped to the type; avg is the
// sum divided by g and needs a float dtype; on bool, sum and max are "or",
// min is "and". max/min propagate NaN.
#include <span>
#include <vector>

#include "ir/op.h"

namespace sp::ir {

enum class ReduceOp : uint8_t { Sum, Avg, Max, Min };

Result<ReduceOp> parseReduceOp(const std::string& name);  // "sum" | "avg" | "max" | "min"

Result<Tensor> reduceTensors(std::span<const Tensor> ts, ReduceOp op);
Result<Tensor> concatTensors(std::span<const Tensor> ts, int64_t dim);
Result<std::vector<Tensor>> splitTensor(const Tensor& t, int64_t dim, int64_t parts);

// One group collective (not send/recv): inputs and outputs in member order.
// `attrs` must be complete; all inputs must have the same type.
Result<std::vector<Tensor>> execCollective(OpKind op, const AttrMap& attrs,
                                           std::span<const Tensor> inputs);

}  // namespace sp::ir

# Elementwise ops, promotion, comparisons, logic and reductions (hand-written).
import torch

class GraphModule(torch.nn.Module):
    def forward(self, primals_1: "f32[2, 3]", primals_2: "i64[2, 3]", primals_3: "b8[2, 3]"):
        # File: /src/math.py:3 in f, code: a = x + 2 * y
        add: "f32[2, 3]" = torch.ops.aten.add.Tensor(primals_1, primals_2, alpha = 2)
        add_1: "f32[2, 3]" = torch.ops.aten.add.Scalar(primals_1, 1.5)
        sub: "i64[2, 3]" = torch.ops.aten.sub.Tensor(primals_2, 1)
        rsub: "f32[2, 3]" = torch.ops.aten.rsub.Scalar(primals_1, 1)
        mul: "f32[2, 3]" = torch.ops.aten.mul.Tensor(primals_1, primals_2)
        div: "f32[2, 3]" = torch.ops.aten.div.Tensor(primals_2, 4)
        div_1: "i64[2, 3]" = torch.ops.aten.div.Tensor_mode(primals_2, 4, rounding_mode = 'floor')
        pow_1: "f32[2, 3]" = torch.ops.aten.pow.Tensor_Scalar(primals_1, 2)
        exp: "f32[2, 3]" = torch.ops.aten.exp.default(primals_1)
        sigmoid: "f32[2, 3]" = torch.ops.aten.sigmoid.default(primals_1)
        masked_fill: "f32[2, 3]" = torch.ops.aten.masked_fill.Scalar(primals_1, primals_3, -inf)
        lt: "b8[2, 3]" = torch.ops.aten.lt.Scalar(primals_2, 2.5)
        eq: "b8[2, 3]" = torch.ops.aten.eq.Tensor(primals_1, primals_2)
        bitwise_or: "b8[2, 3]" = torch.ops.aten.bitwise_or.Tensor(lt, primals_3)
        bitwise_not: "b8[2, 3]" = torch.ops.aten.bitwise_not.default(bitwise_or)
        where: "f32[2, 3]" = torch.ops.aten.where.self(primals_3, primals_1, 0.0)
        sum_1: "f32[2, 1]" = torch.ops.aten.sum.dim_IntList(primals_1, [-1], True)
        sum_2: "i64[]" = torch.ops.aten.sum.default(primals_3)
        mean: "f32[3]" = torch.ops.aten.mean.dim(primals_1, [0])
        amax: "f32[2]" = torch.ops.aten.amax.default(primals_1, [1])
        max_1 = torch.ops.aten.max.dim(primals_1, 1)
        getitem: "f32[2]" = max_1[0]
        getitem_1: "i64[2]" = max_1[1];  max_1 = None
        _softmax: "f32[2, 3]" = torch.ops.aten._softmax.default(primals_1, -1, False)
        _to_copy: "f32[2, 3]" = torch.ops.aten._to_copy.default(primals_2, dtype = torch.float32)
        clamp: "f32[2, 3]" = torch.ops.aten.clamp.default(primals_1, -1.0, 1.0)
        ones_like: "f32[2, 3]" = torch.ops.aten.ones_like.default(primals_1, pin_memory = False)
        return [add, add_1, sub, rsub, mul, div, div_1, pow_1, exp, sigmoid, masked_fill, lt, eq, bitwise_or, bitwise_not, where, sum_1, sum_2, mean, amax, getitem, getitem_1, _softmax, _to_copy, clamp, ones_like]

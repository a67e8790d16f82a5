# Layout and indexing ops on small integer-valued tensors (hand-written).
import torch
from torch import device

class GraphModule(torch.nn.Module):
    def forward(self, primals_1: "f32[4, 6]", primals_2: "i64[3]", primals_3: "b8[4]", primals_4: "f32[2, 6]"):
        # File: /src/layout.py:1 in f, code: a = x[:, 2:]
        slice_1: "f32[4, 4]" = torch.ops.aten.slice.Tensor(primals_1, 1, 2, 9223372036854775807)
        slice_2: "f32[2, 6]" = torch.ops.aten.slice.Tensor(primals_1, 0, 0, -1, 2)
        select: "f32[6]" = torch.ops.aten.select.int(primals_1, 0, -1)
        slice_scatter: "f32[4, 6]" = torch.ops.aten.slice_scatter.default(primals_1, primals_4, 0, 1, 3)
        slice_scatter_1: "f32[4, 6]" = torch.ops.aten.slice_scatter.default(primals_1, primals_4, 0, 0, 9223372036854775807, 2)
        index: "f32[3, 6]" = torch.ops.aten.index.Tensor(primals_1, [primals_2])
        index_1: "f32[3]" = torch.ops.aten.index.Tensor(primals_1, [primals_2, primals_2])
        index_2: "f32[4, 3]" = torch.ops.aten.index.Tensor(primals_1, [None, primals_2])
        _tensor_constant0 = self._tensor_constant0
        lift_fresh_copy: "f32[]" = torch.ops.aten.lift_fresh_copy.default(_tensor_constant0);  _tensor_constant0 = None
        index_put: "f32[4, 6]" = torch.ops.aten.index_put.default(primals_1, [primals_3], lift_fresh_copy)
        index_put_1: "f32[4, 6]" = torch.ops.aten.index_put.default(primals_1, [primals_2], select, True)
        embedding: "f32[3, 6]" = torch.ops.aten.embedding.default(primals_1, primals_2)
        cat: "f32[6, 6]" = torch.ops.aten.cat.default([primals_1, primals_4])
        split = torch.ops.aten.split.Tensor(primals_1, 4, 1)
        getitem: "f32[4, 4]" = split[0]
        getitem_1: "f32[4, 2]" = split[1];  split = None
        permute: "f32[6, 4]" = torch.ops.aten.permute.default(primals_1, [1, 0])
        unsqueeze: "f32[4, 1, 6]" = torch.ops.aten.unsqueeze.default(primals_1, 1)
        expand: "f32[4, 3, 6]" = torch.ops.aten.expand.default(unsqueeze, [-1, 3, -1])
        squeeze: "f32[4, 6]" = torch.ops.aten.squeeze.dim(unsqueeze, 1)
        arange: "i64[5]" = torch.ops.aten.arange.start_step(1, 11, 2, device = device(type='cpu'), pin_memory = False)
        full: "f32[2, 2]" = torch.ops.aten.full.default([2, 2], -inf, dtype = torch.float32, layout = torch.strided, device = device(type='cpu'), pin_memory = False)
        return (slice_1, slice_2, select, slice_scatter, slice_scatter_1, index, index_1, index_2, index_put, index_put_1, embedding, cat, getitem, getitem_1, permute, expand, squeeze, arange, full)

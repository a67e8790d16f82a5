# A tiny attention block in Megatron's style: fused QKV, baddbmm on an empty
# buffer, masked_fill, softmax, dropout, bmm, output projection, layer norm.
import torch
from torch import device

class GraphModule(torch.nn.Module):
    def forward(self, primals_1: "f32[4, 2, 8]", primals_2: "f32[24, 8]", primals_3: "f32[24]", primals_4: "f32[8, 8]", primals_5: "b8[2, 1, 4, 4]", primals_6: "f32[8]", primals_7: "f32[8]"):
        # File: /src/attn.py:20 in forward, code: qkv = self.qkv(x)
        t: "f32[8, 24]" = torch.ops.aten.t.default(primals_2)
        view: "f32[8, 8]" = torch.ops.aten.view.default(primals_1, [8, 8])
        mm: "f32[8, 24]" = torch.ops.aten.mm.default(view, t)
        view_1: "f32[4, 2, 24]" = torch.ops.aten.view.default(mm, [4, 2, 24])
        add: "f32[4, 2, 24]" = torch.ops.aten.add.Tensor(view_1, primals_3)
        view_2: "f32[4, 2, 2, 12]" = torch.ops.aten.view.default(add, [4, 2, 2, 12])
        split_with_sizes = torch.ops.aten.split_with_sizes.default(view_2, [4, 4, 4], 3)
        getitem: "f32[4, 2, 2, 4]" = split_with_sizes[0]
        getitem_1: "f32[4, 2, 2, 4]" = split_with_sizes[1]
        getitem_2: "f32[4, 2, 2, 4]" = split_with_sizes[2];  split_with_sizes = None

        # File: /src/attn.py:30 in core, code: scores = torch.baddbmm(buf, q, k, beta=0.0, alpha=0.5)
        view_3: "f32[4, 4, 4]" = torch.ops.aten.view.default(getitem, [4, 4, 4])
        view_4: "f32[4, 4, 4]" = torch.ops.aten.view.default(getitem_1, [4, 4, -1])
        empty: "f32[4, 4, 4]" = torch.ops.aten.empty.memory_format([4, 4, 4], dtype = torch.float32, device = device(type='cuda', index=0), pin_memory = False)
        transpose: "f32[4, 4, 4]" = torch.ops.aten.transpose.int(view_3, 0, 1)
        transpose_1: "f32[4, 4, 4]" = torch.ops.aten.transpose.int(view_4, 0, 1)
        transpose_2: "f32[4, 4, 4]" = torch.ops.aten.transpose.int(transpose_1, 1, 2)
        baddbmm: "f32[4, 4, 4]" = torch.ops.aten.baddbmm.default(empty, transpose, transpose_2, beta = 0.0, alpha = 0.5);  empty = None
        view_5: "f32[2, 2, 4, 4]" = torch.ops.aten.view.default(baddbmm, [2, 2, 4, 4])
        masked_fill: "f32[2, 2, 4, 4]" = torch.ops.aten.masked_fill.Scalar(view_5, primals_5, -10000.0)
        _softmax: "f32[2, 2, 4, 4]" = torch.ops.aten._softmax.default(masked_fill, -1, False)

        # File: /src/attn.py:35 in core, code: probs = self.dropout(probs)
        native_dropout = torch.ops.aten.native_dropout.default(_softmax, 0.25, True)
        getitem_3: "f32[2, 2, 4, 4]" = native_dropout[0]
        getitem_4: "b8[2, 2, 4, 4]" = native_dropout[1];  native_dropout = None

        # File: /src/attn.py:40 in core, code: ctx = torch.bmm(probs, v)
        view_6: "f32[4, 4, 4]" = torch.ops.aten.view.default(getitem_2, [4, 4, 4])
        view_7: "f32[4, 4, 4]" = torch.ops.aten.view.default(getitem_3, [4, 4, 4])
        transpose_3: "f32[4, 4, 4]" = torch.ops.aten.transpose.int(view_6, 0, 1)
        bmm: "f32[4, 4, 4]" = torch.ops.aten.bmm.default(view_7, transpose_3)
        view_8: "f32[2, 2, 4, 4]" = torch.ops.aten.view.default(bmm, [2, 2, 4, 4])
        permute: "f32[4, 2, 2, 4]" = torch.ops.aten.permute.default(view_8, [2, 0, 1, 3])
        clone: "f32[4, 2, 2, 4]" = torch.ops.aten.clone.default(permute, memory_format = torch.contiguous_format)
        view_9: "f32[4, 2, 8]" = torch.ops.aten.view.default(clone, [4, 2, 8])

        # File: /src/attn.py:45 in forward, code: out = self.ln(x + self.proj(ctx))
        t_1: "f32[8, 8]" = torch.ops.aten.t.default(primals_4)
        view_10: "f32[8, 8]" = torch.ops.aten.view.default(view_9, [8, 8])
        mm_1: "f32[8, 8]" = torch.ops.aten.mm.default(view_10, t_1)
        view_11: "f32[4, 2, 8]" = torch.ops.aten.view.default(mm_1, [4, 2, 8])
        add_1: "f32[4, 2, 8]" = torch.ops.aten.add.Tensor(primals_1, view_11)
        native_layer_norm = torch.ops.aten.native_layer_norm.default(add_1, [8], primals_6, primals_7, 1e-05)
        getitem_5: "f32[4, 2, 8]" = native_layer_norm[0]
        getitem_6: "f32[4, 2, 1]" = native_layer_norm[1]
        getitem_7: "f32[4, 2, 1]" = native_layer_norm[2];  native_layer_norm = None
        return [getitem_5, getitem_6, getitem_7, getitem_4, _softmax]

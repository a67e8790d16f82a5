# Reference for te.py: the same computations in core ATen ops.
import torch

class GraphModule(torch.nn.Module):
    def forward(self, x: "f32[3, 8]", w: "f32[8]", b: "f32[8]"):
        native_layer_norm = torch.ops.aten.native_layer_norm.default(x, [8], w, b, 1e-05)
        getitem: "f32[3, 8]" = native_layer_norm[0]
        getitem_1: "f32[3, 1]" = native_layer_norm[1]
        getitem_2: "f32[3, 1]" = native_layer_norm[2];  native_layer_norm = None
        view: "f32[3]" = torch.ops.aten.view.default(getitem_1, [3])
        view_1: "f32[3]" = torch.ops.aten.view.default(getitem_2, [3])
        pow_1: "f32[3, 8]" = torch.ops.aten.pow.Tensor_Scalar(x, 2)
        mean: "f32[3, 1]" = torch.ops.aten.mean.dim(pow_1, [-1], True)
        add: "f32[3, 1]" = torch.ops.aten.add.Tensor(mean, 1e-05)
        rsqrt: "f32[3, 1]" = torch.ops.aten.rsqrt.default(add)
        mul: "f32[3, 8]" = torch.ops.aten.mul.Tensor(x, rsqrt)
        mul_1: "f32[3, 8]" = torch.ops.aten.mul.Tensor(mul, w)
        view_2: "f32[3]" = torch.ops.aten.view.default(rsqrt, [3])
        gelu: "f32[3, 8]" = torch.ops.aten.gelu.default(x, approximate = 'tanh')
        slice_1: "f32[3, 4]" = torch.ops.aten.slice.Tensor(x, 1, 0, 4)
        slice_2: "f32[3, 4]" = torch.ops.aten.slice.Tensor(x, 1, 4, 8)
        silu: "f32[3, 4]" = torch.ops.aten.silu.default(slice_1)
        mul_2: "f32[3, 4]" = torch.ops.aten.mul.Tensor(silu, slice_2)
        return (getitem, view, view_1, mul_1, view_2, gelu, mul_2)

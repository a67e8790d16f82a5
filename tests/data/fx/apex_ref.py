# Reference for apex.py: the same computations in core ATen ops.
import torch

class GraphModule(torch.nn.Module):
    def forward(self, x: "f32[2, 3, 6]", w: "f32[6]", b: "f32[6]", dy: "f32[2, 3, 6]"):
        native_layer_norm = torch.ops.aten.native_layer_norm.default(x, [6], w, b, 1e-05)
        getitem: "f32[2, 3, 6]" = native_layer_norm[0]
        getitem_1: "f32[2, 3, 1]" = native_layer_norm[1]
        getitem_2: "f32[2, 3, 1]" = native_layer_norm[2];  native_layer_norm = None
        view: "f32[6]" = torch.ops.aten.view.default(getitem_1, [6])
        view_1: "f32[6]" = torch.ops.aten.view.default(getitem_2, [6])
        native_layer_norm_backward = torch.ops.aten.native_layer_norm_backward.default(dy, x, [6], getitem_1, getitem_2, w, b, [True, True, True])
        getitem_3: "f32[2, 3, 6]" = native_layer_norm_backward[0]
        getitem_4: "f32[6]" = native_layer_norm_backward[1]
        getitem_5: "f32[6]" = native_layer_norm_backward[2];  native_layer_norm_backward = None
        native_layer_norm_1 = torch.ops.aten.native_layer_norm.default(x, [6], None, None, 1e-05)
        getitem_6: "f32[2, 3, 6]" = native_layer_norm_1[0];  native_layer_norm_1 = None
        pow_1: "f32[2, 3, 6]" = torch.ops.aten.pow.Tensor_Scalar(x, 2)
        mean: "f32[2, 3, 1]" = torch.ops.aten.mean.dim(pow_1, [-1], True)
        add: "f32[2, 3, 1]" = torch.ops.aten.add.Tensor(mean, 1e-05)
        rsqrt: "f32[2, 3, 1]" = torch.ops.aten.rsqrt.default(add)
        mul: "f32[2, 3, 6]" = torch.ops.aten.mul.Tensor(x, rsqrt)
        getitem_7: "f32[2, 3, 6]" = torch.ops.aten.mul.Tensor(mul, w)
        getitem_8: "f32[6]" = torch.ops.aten.view.default(rsqrt, [6])
        return (getitem, view, view_1, getitem_3, getitem_4, getitem_5, getitem_6, getitem_7, getitem_8)

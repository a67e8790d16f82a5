# Backward ops (hand-written): each checked numerically against finite
# differences or direct loops in fx_import_test.cpp.
import torch

class GraphModule(torch.nn.Module):
    def forward(self, primals_1: "f32[3, 4]", primals_2: "f32[3, 4]", primals_3: "f32[4]", primals_4: "f32[4]", primals_5: "i64[2, 3]", primals_6: "f32[2, 3, 4]"):
        # File: /src/grad.py:5 in backward, code: softmax, gelu, sigmoid, threshold
        _softmax: "f32[3, 4]" = torch.ops.aten._softmax.default(primals_1, 1, False)
        _softmax_backward_data: "f32[3, 4]" = torch.ops.aten._softmax_backward_data.default(primals_2, _softmax, 1, torch.float32)
        gelu_backward: "f32[3, 4]" = torch.ops.aten.gelu_backward.default(primals_2, primals_1)
        gelu_backward_1: "f32[3, 4]" = torch.ops.aten.gelu_backward.default(primals_2, primals_1, approximate = 'tanh')
        sigmoid: "f32[3, 4]" = torch.ops.aten.sigmoid.default(primals_1)
        sigmoid_backward: "f32[3, 4]" = torch.ops.aten.sigmoid_backward.default(primals_2, sigmoid)
        silu_backward: "f32[3, 4]" = torch.ops.aten.silu_backward.default(primals_2, primals_1)
        slice_backward: "f32[3, 6]" = torch.ops.aten.slice_backward.default(primals_2, [3, 6], 1, 1, 5, 1)
        slice_backward_1: "f32[3, 8]" = torch.ops.aten.slice_backward.default(primals_2, [3, 8], 1, 0, 8, 2)
        threshold_backward: "f32[3, 4]" = torch.ops.aten.threshold_backward.default(primals_2, primals_1, 0)

        # File: /src/grad.py:9 in backward, code: layer norm
        native_layer_norm = torch.ops.aten.native_layer_norm.default(primals_1, [4], primals_3, primals_4, 1e-05)
        getitem: "f32[3, 4]" = native_layer_norm[0]
        getitem_1: "f32[3, 1]" = native_layer_norm[1]
        getitem_2: "f32[3, 1]" = native_layer_norm[2];  native_layer_norm = None
        native_layer_norm_backward = torch.ops.aten.native_layer_norm_backward.default(primals_2, primals_1, [4], getitem_1, getitem_2, primals_3, primals_4, [True, True, True])
        getitem_3: "f32[3, 4]" = native_layer_norm_backward[0]
        getitem_4: "f32[4]" = native_layer_norm_backward[1]
        getitem_5: "f32[4]" = native_layer_norm_backward[2];  native_layer_norm_backward = None

        # File: /src/grad.py:12 in backward, code: embedding
        embedding_dense_backward: "f32[5, 4]" = torch.ops.aten.embedding_dense_backward.default(primals_6, primals_5, 5, 1, False)
        return [_softmax, _softmax_backward_data, gelu_backward, gelu_backward_1, sigmoid_backward, silu_backward, slice_backward, slice_backward_1, threshold_backward, getitem, getitem_3, getitem_4, getitem_5, embedding_dense_backward]

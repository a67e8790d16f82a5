# vLLM kernels through the shipped decompositions (frontend/decomp/vllm.decomp):
# mutating _C kernels via auto_functionalized, attention with and without output.
import torch

class GraphModule(torch.nn.Module):
    def forward(self, x: "f32[4, 8]", w: "f32[8]", r: "f32[4, 8]", g: "f32[4, 8]", pos: "i64[4]", cache: "f32[16, 2]", q: "f32[4, 8]", k: "f32[4, 4]", v: "f32[4, 4]"):
        # File: /src/vllm_model.py:10 in forward, code: ops.rms_norm(out, x, self.weight, self.eps)
        empty: "f32[4, 8]" = torch.ops.aten.empty.memory_format([4, 8], dtype = torch.float32, device = device(type='cuda', index=0), pin_memory = False)
        auto_functionalized = torch.ops.higher_order.auto_functionalized(torch.ops._C.rms_norm.default, result = empty, input = x, weight = w, epsilon = 1e-06);  empty = None
        getitem_1: "f32[4, 8]" = auto_functionalized[1];  auto_functionalized = None
        auto_functionalized_1 = torch.ops.higher_order.auto_functionalized(torch.ops._C.fused_add_rms_norm.default, input = x, residual = r, weight = w, epsilon = 1e-06)
        getitem_3: "f32[4, 8]" = auto_functionalized_1[1]
        getitem_4: "f32[4, 8]" = auto_functionalized_1[2];  auto_functionalized_1 = None
        empty_1: "f32[4, 4]" = torch.ops.aten.empty.memory_format([4, 4], dtype = torch.float32, device = device(type='cuda', index=0), pin_memory = False)
        auto_functionalized_2 = torch.ops.higher_order.auto_functionalized(torch.ops._C.silu_and_mul.default, result = empty_1, input = g);  empty_1 = None
        getitem_6: "f32[4, 4]" = auto_functionalized_2[1];  auto_functionalized_2 = None
        auto_functionalized_3 = torch.ops.higher_order.auto_functionalized(torch.ops._C.rotary_embedding.default, positions = pos, query = q, key = k, head_size = 4, cos_sin_cache = cache, is_neox = True)
        getitem_8: "f32[4, 8]" = auto_functionalized_3[1]
        getitem_9: "f32[4, 4]" = auto_functionalized_3[2];  auto_functionalized_3 = None
        view: "f32[4, 2, 4]" = torch.ops.aten.view.default(getitem_8, [4, 2, 4])
        view_1: "f32[4, 1, 4]" = torch.ops.aten.view.default(getitem_9, [4, 1, 4])
        view_2: "f32[4, 1, 4]" = torch.ops.aten.view.default(v, [4, 1, 4])
        empty_2: "f32[4, 2, 4]" = torch.ops.aten.empty.memory_format([4, 2, 4], dtype = torch.float32, device = device(type='cuda', index=0), pin_memory = False)
        auto_functionalized_4 = torch.ops.higher_order.auto_functionalized(torch.ops.vllm.unified_attention_with_output.default, query = view, key = view_1, value = view_2, output = empty_2, layer_name = 'model.layers.0.self_attn.attn');  empty_2 = None
        getitem_11: "f32[4, 2, 4]" = auto_functionalized_4[1];  auto_functionalized_4 = None
        unified_attention: "f32[4, 2, 4]" = torch.ops.vllm.unified_attention.default(view, view_1, view_2, 'model.layers.0.self_attn.attn')
        return (getitem_1, getitem_3, getitem_4, getitem_6, getitem_8, getitem_9, getitem_11, unified_attention)

# Transformer Engine fused ops through the shipped decompositions (frontend/decomp/te.decomp).
import torch

class GraphModule(torch.nn.Module):
    def forward(self, x: "f32[3, 8]", w: "f32[8]", b: "f32[8]"):
        # File: /src/te_model.py:4 in forward, code: y = self.ln(x)
        layernorm_fwd = torch.ops.tex.layernorm_fwd.default(x, w, b, 1e-05, None, None, tex.DType.kFloat32, 0, False)
        getitem: "f32[3, 8]" = layernorm_fwd[0]
        getitem_1: "f32[3]" = layernorm_fwd[1]
        getitem_2: "f32[3]" = layernorm_fwd[2];  layernorm_fwd = None
        rmsnorm_fwd = torch.ops.tex.rmsnorm_fwd.default(x, w, 1e-05, None, None, tex.DType.kFloat32, 0, False)
        getitem_3: "f32[3, 8]" = rmsnorm_fwd[0]
        getitem_5: "f32[3]" = rmsnorm_fwd[2];  rmsnorm_fwd = None
        gelu: "f32[3, 8]" = torch.ops.tex.gelu.default(x, None)
        swiglu: "f32[3, 4]" = torch.ops.tex.swiglu.default(x, None)
        return (getitem, getitem_1, getitem_2, getitem_3, getitem_5, gelu, swiglu)

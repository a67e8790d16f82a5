# apex fused kernels through the shipped decompositions (frontend/decomp/apex.decomp).
# Compared numerically with apex_ref.py (the same math in core ATen ops).
import torch

class GraphModule(torch.nn.Module):
    def forward(self, x: "f32[2, 3, 6]", w: "f32[6]", b: "f32[6]", dy: "f32[2, 3, 6]"):
        # File: /src/apex_model.py:5 in forward, code: y = self.ln(x)
        fused_layer_norm_affine_fwd = torch.ops.apex.fused_layer_norm_affine_fwd.default(x, w, b, [6], 1e-05)
        getitem: "f32[2, 3, 6]" = fused_layer_norm_affine_fwd[0]
        getitem_1: "f32[6]" = fused_layer_norm_affine_fwd[1]
        getitem_2: "f32[6]" = fused_layer_norm_affine_fwd[2];  fused_layer_norm_affine_fwd = None
        fused_layer_norm_affine_bwd = torch.ops.apex.fused_layer_norm_affine_bwd.default(dy, getitem_1, getitem_2, x, [6], w, b, 1e-05)
        getitem_3: "f32[2, 3, 6]" = fused_layer_norm_affine_bwd[0]
        getitem_4: "f32[6]" = fused_layer_norm_affine_bwd[1]
        getitem_5: "f32[6]" = fused_layer_norm_affine_bwd[2];  fused_layer_norm_affine_bwd = None
        fused_layer_norm_fwd = torch.ops.apex.fused_layer_norm_fwd.default(x, [6], 1e-05)
        getitem_6: "f32[2, 3, 6]" = fused_layer_norm_fwd[0];  fused_layer_norm_fwd = None
        fused_rms_norm_affine_fwd = torch.ops.apex.fused_rms_norm_affine_fwd.default(x, w, [6], 1e-05)
        getitem_7: "f32[2, 3, 6]" = fused_rms_norm_affine_fwd[0]
        getitem_8: "f32[6]" = fused_rms_norm_affine_fwd[1];  fused_rms_norm_affine_fwd = None
        return (getitem, getitem_1, getitem_2, getitem_3, getitem_4, getitem_5, getitem_6, getitem_7, getitem_8)

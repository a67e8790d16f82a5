# torch.where(condition) alone (Mixtral's and Qwen2-MoE's sparse MoE
# routing), as Dynamo prints it with capture_dynamic_output_shape_ops: an
# fx-data-dependent error naming the call.
class GraphModule(torch.nn.Module):
    def forward(self, L_mask_: "i64[2, 4]", L_h_: "f32[4, 8]", L_w_: "f32[8, 8]"):
        l_mask_ = L_mask_
        l_h_ = L_h_
         # File: /m.py:5 in forward, code: idx, top_x = torch.where(expert_mask[expert_idx])
        where = torch.where(l_mask_);  l_mask_ = None
        idx: "i64[u0]" = where[0]
        top_x: "i64[u0]" = where[1];  where = None
        getitem: "f32[1, u0, 8]" = l_h_[None, top_x]
        current_state: "f32[u0, 8]" = getitem.reshape(-1, 8)
        linear: "f32[u0, 8]" = torch._C._nn.linear(current_state, L_w_, None)
        zeros: "f32[4, 8]" = torch.zeros((4, 8), dtype = torch.float32, device = device(type='cpu'))
        index_add_: "f32[4, 8]" = zeros.index_add_(0, top_x, linear);  index_add_ = None
        return (zeros,)

class GraphModule(torch.nn.Module):
    def forward(self, L_hidden_states_: "f32[1, 4, 8]", L_self_modules_norm_parameters_weight_: "f32[8]", L_self_modules_rotary_emb_buffers_inv_freq_: "f32[2]", L_position_ids_: "i64[1, 4]"):
        l_hidden_states_ = L_hidden_states_
        l_self_modules_norm_parameters_weight_ = L_self_modules_norm_parameters_weight_
        l_self_modules_rotary_emb_buffers_inv_freq_ = L_self_modules_rotary_emb_buffers_inv_freq_
        l_position_ids_ = L_position_ids_
        
         # File: /transformers/models/llama/modeling_llama.py:65 in forward, code: hidden_states = hidden_states.to(torch.float32)
        hidden_states: "f32[1, 4, 8]" = l_hidden_states_.to(torch.float32);  l_hidden_states_ = None
        
         # File: /transformers/models/llama/modeling_llama.py:66 in forward, code: variance = hidden_states.pow(2).mean(-1, keepdim=True)
        pow_1: "f32[1, 4, 8]" = hidden_states.pow(2)
        variance: "f32[1, 4, 1]" = pow_1.mean(-1, keepdim = True);  pow_1 = None
        
         # File: /transformers/models/llama/modeling_llama.py:67 in forward, code: hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
        add: "f32[1, 4, 1]" = variance + 1e-06;  variance = None
        rsqrt: "f32[1, 4, 1]" = torch.rsqrt(add);  add = None
        hidden_states_1: "f32[1, 4, 8]" = hidden_states * rsqrt;  hidden_states = rsqrt = None
        
         # File: /transformers/models/llama/modeling_llama.py:68 in forward, code: return self.weight * hidden_states.to(input_dtype)
        to_1: "f32[1, 4, 8]" = hidden_states_1.to(torch.float32);  hidden_states_1 = None
        hidden_states_2: "f32[1, 4, 8]" = l_self_modules_norm_parameters_weight_ * to_1;  l_self_modules_norm_parameters_weight_ = to_1 = None
        
         # File: /transformers/models/llama/modeling_llama.py:102 in forward, code: inv_freq_expanded = self.inv_freq[None, :, None].float().expand(position_ids.shape[0], -1, 1).to(x.device)
        getitem: "f32[1, 2, 1]" = l_self_modules_rotary_emb_buffers_inv_freq_[(None, slice(None, None, None), None)];  l_self_modules_rotary_emb_buffers_inv_freq_ = None
        float_1: "f32[1, 2, 1]" = getitem.float();  getitem = None
        expand: "f32[1, 2, 1]" = float_1.expand(1, -1, 1);  float_1 = None
        inv_freq_expanded: "f32[1, 2, 1]" = expand.to(device(type='cpu'));  expand = None
        
         # File: /transformers/models/llama/modeling_llama.py:103 in forward, code: position_ids_expanded = position_ids[:, None, :].float()
        getitem_1: "i64[1, 1, 4]" = l_position_ids_[(slice(None, None, None), None, slice(None, None, None))];  l_position_ids_ = None
        position_ids_expanded: "f32[1, 1, 4]" = getitem_1.float();  getitem_1 = None
        
         # File: /transformers/models/llama/modeling_llama.py:106 in forward, code: with torch.autocast(device_type=device_type, enabled=False):  # Force float32
        _enter_autocast = torch.amp.autocast_mode._enter_autocast('cpu', None, False, None)
        
         # File: /transformers/models/llama/modeling_llama.py:107 in forward, code: freqs = (inv_freq_expanded.float() @ position_ids_expanded.float()).transpose(1, 2)
        float_3: "f32[1, 2, 1]" = inv_freq_expanded.float();  inv_freq_expanded = None
        float_4: "f32[1, 1, 4]" = position_ids_expanded.float();  position_ids_expanded = None
        matmul: "f32[1, 2, 4]" = float_3 @ float_4;  float_3 = float_4 = None
        freqs: "f32[1, 4, 2]" = matmul.transpose(1, 2);  matmul = None
        
         # File: /transformers/models/llama/modeling_llama.py:108 in forward, code: emb = torch.cat((freqs, freqs), dim=-1)
        emb: "f32[1, 4, 4]" = torch.cat((freqs, freqs), dim = -1);  freqs = None
        cos: "f32[1, 4, 4]" = emb.cos()
        cos_1: "f32[1, 4, 4]" = cos * 1.0;  cos = None
        sin: "f32[1, 4, 4]" = emb.sin();  emb = None
        sin_1: "f32[1, 4, 4]" = sin * 1.0;  sin = None
        
         # File: /transformers/models/llama/modeling_llama.py:106 in forward, code: with torch.autocast(device_type=device_type, enabled=False):  # Force float32
        _exit_autocast = torch.amp.autocast_mode._exit_autocast(_enter_autocast);  _enter_autocast = _exit_autocast = None
        cos_2: "f32[1, 4, 4]" = cos_1.to(dtype = torch.float32);  cos_1 = None
        sin_2: "f32[1, 4, 4]" = sin_1.to(dtype = torch.float32);  sin_1 = None
        
         # File: /transformers/models/llama/modeling_llama.py:200 in forward, code: query_states = self.q_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        view: "f32[1, 4, 2, 4]" = hidden_states_2.view((1, 4, -1, 4))
        query_states: "f32[1, 2, 4, 4]" = view.transpose(1, 2);  view = None
        
         # File: /transformers/models/llama/modeling_llama.py:140 in apply_rotary_pos_emb, code: cos = cos.unsqueeze(unsqueeze_dim)
        cos_3: "f32[1, 1, 4, 4]" = cos_2.unsqueeze(1);  cos_2 = None
        sin_3: "f32[1, 1, 4, 4]" = sin_2.unsqueeze(1);  sin_2 = None
        
         # File: /transformers/models/llama/modeling_llama.py:142 in apply_rotary_pos_emb, code: q_embed = (q * cos) + (rotate_half(q) * sin)
        mul_2: "f32[1, 2, 4, 4]" = query_states * cos_3;  cos_3 = None
        x1: "f32[1, 2, 4, 2]" = query_states[(Ellipsis, slice(None, 2, None))]
        x2: "f32[1, 2, 4, 2]" = query_states[(Ellipsis, slice(2, None, None))];  query_states = None
        neg: "f32[1, 2, 4, 2]" = -x2;  x2 = None
        cat_1: "f32[1, 2, 4, 4]" = torch.cat((neg, x1), dim = -1);  neg = x1 = None
        mul_3: "f32[1, 2, 4, 4]" = cat_1 * sin_3;  cat_1 = sin_3 = None
        q_embed: "f32[1, 2, 4, 4]" = mul_2 + mul_3;  mul_2 = mul_3 = None
        return (hidden_states_2, q_embed)

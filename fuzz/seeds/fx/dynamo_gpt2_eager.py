class GraphModule(torch.nn.Module):
    def forward(self, L_q_: "f32[1, 2, 4, 4]", L_k_: "f32[1, 2, 4, 4]", L_v_: "f32[1, 2, 4, 4]", L_self_modules_attn_buffers_bias_: "b8[1, 1, 8, 8]", L_x_: "f32[2, 4, 4]", L_self_modules_c_attn_parameters_weight_: "f32[4, 6]", L_self_modules_c_attn_parameters_bias_: "f32[6]"):
        l_q_ = L_q_
        l_k_ = L_k_
        l_v_ = L_v_
        l_self_modules_attn_buffers_bias_ = L_self_modules_attn_buffers_bias_
        l_x_ = L_x_
        l_self_modules_c_attn_parameters_weight_ = L_self_modules_c_attn_parameters_weight_
        l_self_modules_c_attn_parameters_bias_ = L_self_modules_c_attn_parameters_bias_
        
         # File: /transformers/models/gpt2/modeling_gpt2.py:190 in _attn, code: attn_weights = torch.matmul(query, key.transpose(-1, -2))
        transpose: "f32[1, 2, 4, 4]" = l_k_.transpose(-1, -2)
        attn_weights: "f32[1, 2, 4, 4]" = torch.matmul(l_q_, transpose);  transpose = None
        
         # File: /transformers/models/gpt2/modeling_gpt2.py:193 in _attn, code: attn_weights = attn_weights / torch.full([], value.size(-1) ** 0.5, dtype=attn_weights.dtype, device=attn_weights.device)
        full: "f32[]" = torch.full([], 2.0, dtype = torch.float32, device = device(type='cpu'))
        attn_weights_1: "f32[1, 2, 4, 4]" = attn_weights / full;  attn_weights = full = None
        
         # File: /transformers/models/gpt2/modeling_gpt2.py:203 in _attn, code: causal_mask = self.bias[:, :, key_length - query_length : key_length, :key_length]
        causal_mask: "b8[1, 1, 4, 4]" = l_self_modules_attn_buffers_bias_[(slice(None, None, None), slice(None, None, None), slice(0, 4, None), slice(None, 4, None))];  l_self_modules_attn_buffers_bias_ = None
        
         # File: /transformers/models/gpt2/modeling_gpt2.py:207 in _attn, code: mask_value = torch.full([], mask_value, dtype=attn_weights.dtype, device=attn_weights.device)
        full_1: "f32[]" = torch.full([], -3.4028234663852886e+38, dtype = torch.float32, device = device(type='cpu'))
        
         # File: /transformers/models/gpt2/modeling_gpt2.py:208 in _attn, code: attn_weights = torch.where(causal_mask, attn_weights.to(attn_weights.dtype), mask_value)
        to: "f32[1, 2, 4, 4]" = attn_weights_1.to(torch.float32);  attn_weights_1 = None
        attn_weights_2: "f32[1, 2, 4, 4]" = torch.where(causal_mask, to, full_1);  causal_mask = to = full_1 = None
        
         # File: /transformers/models/gpt2/modeling_gpt2.py:214 in _attn, code: attn_weights = nn.functional.softmax(attn_weights, dim=-1)
        attn_weights_3: "f32[1, 2, 4, 4]" = torch.nn.functional.softmax(attn_weights_2, dim = -1);  attn_weights_2 = None
        
         # File: /transformers/models/gpt2/modeling_gpt2.py:217 in _attn, code: attn_weights = attn_weights.type(value.dtype)
        attn_weights_4: "f32[1, 2, 4, 4]" = attn_weights_3.type(torch.float32);  attn_weights_3 = None
        
         # File: /transformers/models/gpt2/modeling_gpt2.py:225 in _attn, code: attn_output = torch.matmul(attn_weights, value)
        attn_output: "f32[1, 2, 4, 4]" = torch.matmul(attn_weights_4, l_v_);  attn_weights_4 = None
        sdpa: "f32[1, 2, 4, 4]" = torch._C._nn.scaled_dot_product_attention(l_q_, l_k_, l_v_, attn_mask = None, dropout_p = 0.0, is_causal = True)
        
         # File: /transformers/activations.py:56 in forward, code: return 0.5 * input * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (input + 0.044715 * torch.pow(input, 3.0))))
        mul: "f32[1, 2, 4, 4]" = 0.5 * l_q_
        pow_1: "f32[1, 2, 4, 4]" = torch.pow(l_q_, 3.0)
        mul_1: "f32[1, 2, 4, 4]" = 0.044715 * pow_1;  pow_1 = None
        add: "f32[1, 2, 4, 4]" = l_q_ + mul_1;  mul_1 = None
        mul_2: "f32[1, 2, 4, 4]" = 0.7978845608028654 * add;  add = None
        tanh: "f32[1, 2, 4, 4]" = torch.tanh(mul_2);  mul_2 = None
        add_1: "f32[1, 2, 4, 4]" = 1.0 + tanh;  tanh = None
        mul_3: "f32[1, 2, 4, 4]" = mul * add_1;  mul = add_1 = None
        gelu: "f32[1, 2, 4, 4]" = torch.nn.functional.gelu(l_q_, approximate = 'tanh')
        
         # File: /transformers/pytorch_utils.py:105 in forward, code: x = torch.addmm(self.bias, x.view(-1, x.size(-1)), self.weight)
        view: "f32[8, 4]" = l_x_.view(-1, 4)
        addmm: "f32[8, 6]" = torch.addmm(l_self_modules_c_attn_parameters_bias_, view, l_self_modules_c_attn_parameters_weight_);  view = None
        
         # File: /transformers/pytorch_utils.py:106 in forward, code: x = x.view(size_out)
        view_1: "f32[2, 4, 6]" = addmm.view((2, 4, 6));  addmm = None
        t: "f32[6, 4]" = l_self_modules_c_attn_parameters_weight_.t()
        linear: "f32[2, 4, 6]" = torch._C._nn.linear(l_x_, t, l_self_modules_c_attn_parameters_bias_)
        return (attn_output, sdpa, mul_3, gelu, view_1, linear)

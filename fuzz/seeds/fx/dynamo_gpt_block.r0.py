# gpt_block, TP 2, rank 0
class GraphModule(torch.nn.Module):
    def forward(self, L_x_: "f32[2, 4, 16]", L_self_modules_ln_1_parameters_weight_: "f32[16]", L_self_modules_ln_1_parameters_bias_: "f32[16]", L_self_modules_q_proj_parameters_weight_: "f32[8, 16]", L_self_modules_q_proj_parameters_bias_: "f32[8]", L_self_modules_k_proj_parameters_weight_: "f32[8, 16]", L_self_modules_k_proj_parameters_bias_: "f32[8]", L_self_modules_v_proj_parameters_weight_: "f32[8, 16]", L_self_modules_v_proj_parameters_bias_: "f32[8]", L_self_modules_o_proj_parameters_weight_: "f32[16, 8]", L_self_modules_o_proj_parameters_bias_: "f32[16]", L_self_modules_ln_2_parameters_weight_: "f32[16]", L_self_modules_ln_2_parameters_bias_: "f32[16]", L_self_modules_fc1_parameters_weight_: "f32[32, 16]", L_self_modules_fc1_parameters_bias_: "f32[32]", L_self_modules_fc2_parameters_weight_: "f32[16, 32]", L_self_modules_fc2_parameters_bias_: "f32[16]"):
        l_x_ = L_x_
        l_self_modules_ln_1_parameters_weight_ = L_self_modules_ln_1_parameters_weight_
        l_self_modules_ln_1_parameters_bias_ = L_self_modules_ln_1_parameters_bias_
        l_self_modules_q_proj_parameters_weight_ = L_self_modules_q_proj_parameters_weight_
        l_self_modules_q_proj_parameters_bias_ = L_self_modules_q_proj_parameters_bias_
        l_self_modules_k_proj_parameters_weight_ = L_self_modules_k_proj_parameters_weight_
        l_self_modules_k_proj_parameters_bias_ = L_self_modules_k_proj_parameters_bias_
        l_self_modules_v_proj_parameters_weight_ = L_self_modules_v_proj_parameters_weight_
        l_self_modules_v_proj_parameters_bias_ = L_self_modules_v_proj_parameters_bias_
        l_self_modules_o_proj_parameters_weight_ = L_self_modules_o_proj_parameters_weight_
        l_self_modules_o_proj_parameters_bias_ = L_self_modules_o_proj_parameters_bias_
        l_self_modules_ln_2_parameters_weight_ = L_self_modules_ln_2_parameters_weight_
        l_self_modules_ln_2_parameters_bias_ = L_self_modules_ln_2_parameters_bias_
        l_self_modules_fc1_parameters_weight_ = L_self_modules_fc1_parameters_weight_
        l_self_modules_fc1_parameters_bias_ = L_self_modules_fc1_parameters_bias_
        l_self_modules_fc2_parameters_weight_ = L_self_modules_fc2_parameters_weight_
        l_self_modules_fc2_parameters_bias_ = L_self_modules_fc2_parameters_bias_
        
         # File: /work/model/gpt.py:20 in forward, code: a = self.ln_1(x)
        layer_norm: "f32[2, 4, 16]" = torch.nn.functional.layer_norm(l_x_, (16,), l_self_modules_ln_1_parameters_weight_, l_self_modules_ln_1_parameters_bias_, 1e-05)
        
         # File: /work/model/gpt.py:21 in forward, code: q = self.q_proj(a).view(B, T, -1, 4).transpose(1, 2)
        linear: "f32[2, 4, 8]" = torch._C._nn.linear(layer_norm, l_self_modules_q_proj_parameters_weight_, l_self_modules_q_proj_parameters_bias_)
        view: "f32[2, 4, 2, 4]" = linear.view(2, 4, -1, 4);  linear = None
        transpose: "f32[2, 2, 4, 4]" = view.transpose(1, 2);  view = None
        
         # File: /work/model/gpt.py:22 in forward, code: k = self.k_proj(a).view(B, T, -1, 4).transpose(1, 2)
        linear_1: "f32[2, 4, 8]" = torch._C._nn.linear(layer_norm, l_self_modules_k_proj_parameters_weight_, l_self_modules_k_proj_parameters_bias_)
        view_1: "f32[2, 4, 2, 4]" = linear_1.view(2, 4, -1, 4);  linear_1 = None
        transpose_1: "f32[2, 2, 4, 4]" = view_1.transpose(1, 2);  view_1 = None
        
         # File: /work/model/gpt.py:23 in forward, code: v = self.v_proj(a).view(B, T, -1, 4).transpose(1, 2)
        linear_2: "f32[2, 4, 8]" = torch._C._nn.linear(layer_norm, l_self_modules_v_proj_parameters_weight_, l_self_modules_v_proj_parameters_bias_)
        view_2: "f32[2, 4, 2, 4]" = linear_2.view((2, 4, -1, 4));  linear_2 = None
        permute: "f32[2, 2, 4, 4]" = view_2.permute(0, 2, 1, 3);  view_2 = None
        
         # File: /work/model/gpt.py:24 in forward, code: y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        scaled_dot_product_attention: "f32[2, 2, 4, 4]" = torch._C._nn.scaled_dot_product_attention(transpose, transpose_1, permute, attn_mask = None, dropout_p = 0.0, is_causal = True);  transpose = transpose_1 = permute = None
        
         # File: /work/model/gpt.py:25 in forward, code: y = y.transpose(1, 2).contiguous().reshape(B, T, -1)
        transpose_2: "f32[2, 4, 2, 4]" = scaled_dot_product_attention.transpose(1, 2);  scaled_dot_product_attention = None
        contiguous: "f32[2, 4, 2, 4]" = transpose_2.contiguous();  transpose_2 = None
        reshape: "f32[2, 4, 8]" = contiguous.reshape(2, 4, -1);  contiguous = None
        
         # File: /work/model/gpt.py:26 in forward, code: y = self.o_proj(y)
        linear_3: "f32[2, 4, 16]" = torch._C._nn.linear(reshape, l_self_modules_o_proj_parameters_weight_, None);  reshape = None
        
         # File: /work/model/gpt.py:40 in forward, code: y = funcol.all_reduce(y, 'sum', self.tp_group)
        all_reduce: "f32[2, 4, 16]" = torch.ops._c10d_functional.all_reduce(linear_3, 'sum', '0');  linear_3 = None
        wait_tensor: "f32[2, 4, 16]" = torch.ops._c10d_functional.wait_tensor(all_reduce);  all_reduce = None
        
         # File: /work/model/gpt.py:27 in forward, code: x = x + self.drop(y + self.o_proj_bias)
        add: "f32[2, 4, 16]" = wait_tensor + l_self_modules_o_proj_parameters_bias_;  wait_tensor = None
        dropout: "f32[2, 4, 16]" = torch.nn.functional.dropout(add, 0.1, False, False);  add = None
        add_1: "f32[2, 4, 16]" = l_x_ + dropout;  l_x_ = dropout = None
        
         # File: /work/model/gpt.py:28 in forward, code: m = self.ln_2(x)
        layer_norm_1: "f32[2, 4, 16]" = torch.nn.functional.layer_norm(add_1, (16,), l_self_modules_ln_2_parameters_weight_, l_self_modules_ln_2_parameters_bias_, 1e-05)
        
         # File: /work/model/gpt.py:29 in forward, code: m = F.gelu(self.fc1(m), approximate='tanh')
        linear_4: "f32[2, 4, 32]" = torch._C._nn.linear(layer_norm_1, l_self_modules_fc1_parameters_weight_, l_self_modules_fc1_parameters_bias_)
        gelu: "f32[2, 4, 32]" = torch.nn.functional.gelu(linear_4, approximate = 'tanh');  linear_4 = None
        
         # File: /work/model/gpt.py:30 in forward, code: m = self.fc2(m)
        linear_5: "f32[2, 4, 16]" = torch._C._nn.linear(gelu, l_self_modules_fc2_parameters_weight_, None);  gelu = None
        
         # File: /work/model/gpt.py:41 in forward, code: y = funcol.all_reduce(y, 'sum', self.tp_group)
        all_reduce_1: "f32[2, 4, 16]" = torch.ops._c10d_functional.all_reduce(linear_5, 'sum', '0');  linear_5 = None
        wait_tensor_1: "f32[2, 4, 16]" = torch.ops._c10d_functional.wait_tensor(all_reduce_1);  all_reduce_1 = None
        
         # File: /work/model/gpt.py:31 in forward, code: return x + (m + self.fc2_bias)
        add_2: "f32[2, 4, 16]" = wait_tensor_1 + l_self_modules_fc2_parameters_bias_;  wait_tensor_1 = None
        add_3: "f32[2, 4, 16]" = add_1 + add_2;  add_1 = add_2 = None
        return (add_3,)

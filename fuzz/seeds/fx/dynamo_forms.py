# Dynamo torch-level forms (docs/fx-import.md, "Dynamo torch-level graphs"):
# functions, methods, operators, subscripts, tuple results, autocast off.
class GraphModule(torch.nn.Module):
    def forward(self, L_x_: "f32[2, 3, 4]", L_w_: "f32[5, 4]", L_i_: "i64[2]", L_m_: "b8[2, 3, 4]"):
        l_x_ = L_x_
        l_w_ = L_w_
        _set_grad_enabled = torch._C._set_grad_enabled(False);  _set_grad_enabled = None
         # File: /m.py:3 in forward, code: y = F.linear(x, w)
        linear: "f32[2, 3, 5]" = torch._C._nn.linear(l_x_, l_w_, None)
        gelu: "f32[2, 3, 5]" = torch.nn.functional.gelu(linear, approximate = 'tanh');  linear = None
        mul: "f32[2, 3, 5]" = gelu * 0.5
        sub: "f32[2, 3, 5]" = 1.0 - mul
        pow_1: "f32[2, 3, 5]" = sub ** 2
        neg: "f32[2, 3, 5]" = -pow_1
        view: "f32[6, 5]" = neg.view(6, 5)
        view_1: "f32[3, 2, 5]" = neg.view((3, 2, -1))
        transpose: "f32[2, 4, 3]" = l_x_.transpose(1, 2)
        getitem: "f32[2, 1, 4, 2]" = transpose[(slice(None, None, None), None, Ellipsis, slice(1, 3, None))]
        getitem_1: "f32[3, 4]" = l_x_[0]
        getitem_2: "f32[2, 3, 4]" = l_x_[L_i_]
        chunk = torch.chunk(l_x_, 2, dim = -1)
        getitem_3: "f32[2, 3, 2]" = chunk[0]
        split = l_x_.split([1, 2], 1)
        getitem_4: "f32[2, 2, 4]" = split[1]
        max_1 = l_x_.max(-1)
        getitem_5: "i64[2, 3]" = max_1[1]
        mean: "f32[2, 3, 1]" = l_x_.mean(-1, keepdim = True)
        softmax: "f32[2, 3, 4]" = torch.nn.functional.softmax(l_x_, dim = -1, dtype = torch.float32)
        masked_fill: "f32[2, 3, 4]" = softmax.masked_fill(L_m_, -inf)
        invert: "b8[2, 3, 4]" = ~L_m_
        xor: "b8[2, 3, 4]" = L_m_ ^ invert
        or_: "b8[2, 3, 4]" = invert | xor
        and_: "b8[2, 3, 4]" = or_ & L_m_
        where: "f32[2, 3, 4]" = torch.where(and_, l_x_, 0.0)
        to: "bf16[2, 3, 4]" = where.to(torch.bfloat16)
        _enter_autocast = torch.amp.autocast_mode._enter_autocast('cpu', None, False, None)
        matmul: "f32[2, 3, 3]" = l_x_ @ transpose
        _exit_autocast = torch.amp.autocast_mode._exit_autocast(_enter_autocast);  _enter_autocast = _exit_autocast = None
        sdpa: "f32[2, 3, 4]" = torch._C._nn.scaled_dot_product_attention(l_x_, l_x_, l_x_, attn_mask = None, dropout_p = 0.0, is_causal = True)
        all_reduce: "f32[2, 3, 4]" = torch.ops._c10d_functional.all_reduce(sdpa, 'sum', '0')
        wait_tensor: "f32[2, 3, 4]" = torch.ops._c10d_functional.wait_tensor(all_reduce);  all_reduce = None
        return (view, view_1, getitem, getitem_1, getitem_2, getitem_3, getitem_4, getitem_5, mean, masked_fill, to, matmul, wait_tensor)

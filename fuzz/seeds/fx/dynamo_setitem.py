# Subscript assignments (docs/fx-import.md, "Subscript assignment"): FX's
# print of operator.setitem nodes, each index form.
class GraphModule(torch.nn.Module):
    def forward(self, L_x_: "f32[3, 4]", L_y_: "f32[4]", L_m_: "b8[3]", L_i_: "i64[2]", L_t_: "i64[4]", L_tm_: "b8[4]"):
        l_x_ = L_x_
        l_t_ = L_t_
         # File: /m.py:3 in forward, code: c = x.clone()
        c: "f32[3, 4]" = l_x_.clone()
        c[0] = L_y_;  setitem = c
        c[(slice(None, None, None), 1)] = 2.0;  setitem_1 = c
        c[(Ellipsis, slice(None, 2, None))] = -inf;  setitem_2 = c
        c[(slice(0, None, 2), None, slice(1, 3, None))] = 9
        c[L_m_] = L_y_
        c[(L_m_, slice(2, None, None))] = 0.0;  setitem_3: "f32[3, 4]" = c
        c[L_i_] = 1.5
        c[(slice(None, None, None), [1, -1])] = 8.0
         # File: /m.py:9 in forward, code: masked_input[input_mask] = 0
        sub: "i64[4]" = l_t_ - 4
        sub[L_tm_] = 0;  setitem_4 = sub
        return (c, sub)

# In-place ops on a subscript view written back (docs/fx-import.md,
# "Augmented subscript assignment"): FX's print of Python's `x[i] += v`
# (getitem, iadd, setitem), an advanced index, a view of a view; in-place
# ops with operands of another dtype (computed in the promoted dtype, cast
# back).
class GraphModule(torch.nn.Module):
    def forward(self, L_x_: "f32[3, 4]", L_v_: "f32[4]", L_i_: "i64[2]", L_h_: "f16[4]", L_n_: "i64[4]"):
        l_x_ = L_x_
        l_v_ = L_v_
         # File: /m.py:3 in forward, code: c = x.clone()
        c: "f32[3, 4]" = l_x_.clone()
         # File: /m.py:4 in forward, code: c[1] += v
        getitem: "f32[4]" = c[1]
        getitem += l_v_;  iadd: "f32[4]" = getitem;  getitem = None
        c[1] = iadd;  setitem = c;  iadd = None
        getitem_1: "f32[3]" = c[:, 0]
        iadd_1: "f32[3]" = operator.iadd(getitem_1, 2.0)
        c[:, 0] = iadd_1;  setitem_1 = c
        getitem_2: "f32[2, 4]" = c[L_i_]
        getitem_2 *= 0.5;  imul: "f32[2, 4]" = getitem_2
        c[L_i_] = imul;  setitem_2 = c
        getitem_3: "f32[4]" = c[0]
        getitem_4: "f32[2]" = getitem_3[1:3]
        getitem_4 -= 1;  isub: "f32[2]" = getitem_4
        getitem_3[1:3] = isub;  setitem_3 = getitem_3
        w: "f32[4]" = getitem_3 * 1.0
         # File: /m.py:9 in forward, code: h += x[0]
        h: "f16[4]" = L_h_.clone()
        row: "f32[4]" = l_x_[0]
        h += row;  iadd_2: "f16[4]" = h
        n: "i64[4]" = L_n_.clone()
        n *= 2;  imul_1: "i64[4]" = n
        return (w, iadd_2, imul_1)

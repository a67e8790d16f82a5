# Python's slice syntax in subscripts (docs/fx-import.md, "Dynamo
# torch-level graphs"): `a:b:c` is FX's slice(a, b, c), in reads and in
# subscript assignment.
class GraphModule(torch.nn.Module):
    def forward(self, L_x_: "f32[4, 6, 8]", L_y_: "f32[6, 8]", L_i_: "i64[2]"):
        l_x_ = L_x_
        l_y_ = L_y_
         # File: /m.py:3 in forward, code: a = x[:, 0]
        a: "f32[4, 8]" = l_x_[:, 0]
        b: "f32[2, 6, 8]" = l_x_[1:3]
        d: "f32[2, 1, 6, 8]" = l_x_[::2, None, ...]
        e: "f32[3, 6, 8]" = l_x_[:-1]
        f: "f32[4, 6, 8]" = l_x_[0:4:1]
        g: "f32[4, 6, 2]" = l_x_[..., 2:7:3]
        h: "f32[4, 2, 8]" = l_x_[:, L_i_]
        c: "f32[4, 6, 8]" = l_x_.clone()
         # File: /m.py:9 in forward, code: c[:, 0] = y
        y0: "f32[8]" = l_y_[0]
        c[:, 0] = y0;  setitem = c
        c[1:3, :, -1] = 0.5;  setitem_1 = c
        c[..., ::4] = -inf
        return (a, b, d, e, f, g, h, c)

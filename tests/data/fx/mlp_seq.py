# A tiny 2-layer MLP, sequential (hand-written in the format torch.fx prints).
import torch

class GraphModule(torch.nn.Module):
    def forward(self, primals_1: "f32[8, 4]", primals_2: "f32[8]", primals_3: "f32[4, 8]", primals_4: "f32[2, 3, 4]"):
        # File: /src/mlp.py:10 in forward, code: h = self.fc1(x)
        t: "f32[4, 8]" = torch.ops.aten.t.default(primals_1);  primals_1 = None
        view: "f32[6, 4]" = torch.ops.aten.view.default(primals_4, [6, 4])
        addmm: "f32[6, 8]" = torch.ops.aten.addmm.default(primals_2, view, t);  primals_2 = view = t = None
        view_1: "f32[2, 3, 8]" = torch.ops.aten.view.default(addmm, [2, 3, -1]);  addmm = None

        # File: /src/mlp.py:11 in forward, code: h = F.gelu(h, approximate="tanh")
        gelu: "f32[2, 3, 8]" = torch.ops.aten.gelu.default(view_1, approximate = 'tanh')

        # File: /src/mlp.py:12 in forward, code: y = self.fc2(h)
        t_1: "f32[8, 4]" = torch.ops.aten.t.default(primals_3)
        view_2: "f32[6, 8]" = torch.ops.aten.view.default(gelu, [6, 8])
        mm: "f32[6, 4]" = torch.ops.aten.mm.default(view_2, t_1);  view_2 = t_1 = None
        view_3: "f32[2, 3, 4]" = torch.ops.aten.view.default(mm, [2, 3, 4]);  mm = None
        return [view_3, gelu]

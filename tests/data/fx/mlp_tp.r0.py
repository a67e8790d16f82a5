# The MLP of mlp_seq.py with tensor parallelism 2, rank 0: fc1 split on its
# output dim (column parallel), fc2 on its input dim (row parallel).
import torch

# Graph[rank=0](fw, gid=0)
class GraphModule(torch.nn.Module):
    def forward(self, primals_1: "f32[4, 4]", primals_2: "f32[4]", primals_3: "f32[4, 4]", primals_4: "f32[2, 3, 4]"):
        # File: /src/mlp.py:10 in forward, code: h = self.fc1(x)
        t: "f32[4, 4]" = torch.ops.aten.t.default(primals_1);  primals_1 = None
        view: "f32[6, 4]" = torch.ops.aten.view.default(primals_4, [6, 4])
        addmm: "f32[6, 4]" = torch.ops.aten.addmm.default(primals_2, view, t);  primals_2 = view = t = None
        view_1: "f32[2, 3, 4]" = torch.ops.aten.view.default(addmm, [2, 3, -1]);  addmm = None

        # File: /src/mlp.py:11 in forward, code: h = F.gelu(h, approximate="tanh")
        gelu: "f32[2, 3, 4]" = torch.ops.aten.gelu.default(view_1, approximate = 'tanh')

        # File: /src/mlp.py:12 in forward, code: y = self.fc2(h)
        t_1: "f32[4, 4]" = torch.ops.aten.t.default(primals_3)
        view_2: "f32[6, 4]" = torch.ops.aten.view.default(gelu, [6, 4])
        mm: "f32[6, 4]" = torch.ops.aten.mm.default(view_2, t_1);  view_2 = t_1 = None
        view_3: "f32[2, 3, 4]" = torch.ops.aten.view.default(mm, [2, 3, 4]);  mm = None

        # File: /src/tp.py:40 in reduce_from_tp_region, code: torch.distributed.all_reduce(x)
        all_reduce: "f32[2, 3, 4]" = torch.ops._c10d_functional.all_reduce.default(view_3, 'sum', '3')
        wait_tensor: "f32[2, 3, 4]" = torch.ops._c10d_functional.wait_tensor.default(all_reduce);  all_reduce = None
        return [wait_tensor, gelu]

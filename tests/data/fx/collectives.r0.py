# Every c10d functional collective on a 2-rank world (rank 0).
import torch

class GraphModule(torch.nn.Module):
    def forward(self, primals_1: "f32[2, 3]"):
        # File: /src/coll.py:3 in f, code: collectives
        all_gather_into_tensor: "f32[4, 3]" = torch.ops._c10d_functional.all_gather_into_tensor.default(primals_1, 2, '5')
        wait_tensor: "f32[4, 3]" = torch.ops._c10d_functional.wait_tensor.default(all_gather_into_tensor);  all_gather_into_tensor = None
        reduce_scatter_tensor: "f32[1, 3]" = torch.ops._c10d_functional.reduce_scatter_tensor.default(primals_1, 'sum', 2, '5')
        wait_tensor_1: "f32[1, 3]" = torch.ops._c10d_functional.wait_tensor.default(reduce_scatter_tensor);  reduce_scatter_tensor = None
        all_to_all_single: "f32[2, 3]" = torch.ops._c10d_functional.all_to_all_single.default(primals_1, [1, 1], [1, 1], '5')
        wait_tensor_2: "f32[2, 3]" = torch.ops._c10d_functional.wait_tensor.default(all_to_all_single);  all_to_all_single = None
        broadcast: "f32[2, 3]" = torch.ops._c10d_functional.broadcast.default(primals_1, 1, '5')
        wait_tensor_3: "f32[2, 3]" = torch.ops._c10d_functional.wait_tensor.default(broadcast);  broadcast = None
        all_reduce: "f32[2, 3]" = torch.ops._c10d_functional.all_reduce.default(primals_1, 'avg', '5')
        wait_tensor_4: "f32[2, 3]" = torch.ops._c10d_functional.wait_tensor.default(all_reduce);  all_reduce = None
        return [wait_tensor, wait_tensor_1, wait_tensor_2, wait_tensor_3, wait_tensor_4]

# vllm.all_reduce through its decomposition, on two ranks.
import torch

class GraphModule(torch.nn.Module):
    def forward(self, x: "f32[2, 3]"):
        # File: /src/vllm_tp.py:7 in forward, code: out = tensor_model_parallel_all_reduce(x)
        all_reduce: "f32[2, 3]" = torch.ops.vllm.all_reduce.default(x, 'tp:0')
        return (all_reduce,)

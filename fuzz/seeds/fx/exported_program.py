ExportedProgram:
    class GraphModule(torch.nn.Module):
        def forward(self, p_linear_weight: "f32[4, 8]", p_linear_bias: "f32[4]", b_running: "f32[4]", x: "f32[2, 8]"):
            # File: /tmp/m.py:10 in forward, code: return self.linear(x)
            linear: "f32[2, 4]" = torch.ops.aten.linear.default(x, p_linear_weight, p_linear_bias);  x = p_linear_weight = p_linear_bias = None
            add: "f32[4]" = torch.ops.aten.add.Tensor(b_running, 1);  b_running = None
            relu: "f32[2, 4]" = torch.ops.aten.relu.default(linear);  linear = None
            return (add, relu)

Graph signature: 
    # inputs
    p_linear_weight: PARAMETER target='linear.weight'
    p_linear_bias: PARAMETER target='linear.bias'
    b_running: BUFFER target='running' persistent=True
    x: USER_INPUT

    # outputs
    add: BUFFER_MUTATION target='running'
    relu: USER_OUTPUT

Range constraints: {}

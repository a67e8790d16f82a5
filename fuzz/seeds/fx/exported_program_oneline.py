ExportedProgram:
    class GraphModule(torch.nn.Module):
        def forward(self, p_w: "f32[4, 8]", x: "f32[2, 8]"):
            t: "f32[8, 4]" = torch.ops.aten.t.default(p_w);  p_w = None
            mm: "f32[2, 4]" = torch.ops.aten.mm.default(x, t);  x = t = None
            return (mm,)

Graph signature: ExportGraphSignature(input_specs=[InputSpec(kind=<InputKind.PARAMETER: 2>, arg=TensorArgument(name='p_w'), target='w', persistent=None), InputSpec(kind=<InputKind.USER_INPUT: 1>, arg=TensorArgument(name='x'), target=None, persistent=None)], output_specs=[OutputSpec(kind=<OutputKind.USER_OUTPUT: 1>, arg=TensorArgument(name='mm'), target=None)])
Range constraints: {}

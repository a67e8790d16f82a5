# Two-stage block with a residual: y = tanh(x @ w0) @ w1 + x.
graph block {
  input %x: f32[4, 8]
  param %w0: f32[8, 8]
  param %w1: f32[8, 8]
  %h: f32[4, 8] = matmul(%x, %w0)
  %a: f32[4, 8] = tanh(%h)
  %o: f32[4, 8] = matmul(%a, %w1)
  %y: f32[4, 8] = add(%o, %x)
  output %y
}

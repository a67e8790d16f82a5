# Pre-norm MLP block with a residual.
graph ln_mlp {
  input %x: f32[8, 8]
  param %gamma: f32[8]
  param %beta: f32[8]
  param %w1: f32[8, 16]
  param %w2: f32[16, 8]
  %n: f32[8, 8] = layer_norm(%x, %gamma, %beta)
  %h: f32[8, 16] = matmul(%n, %w1)
  %g: f32[8, 16] = gelu(%h)
  %o: f32[8, 8] = matmul(%g, %w2)
  %y: f32[8, 8] = add(%x, %o)
  output %y
}

# Square MLP: y = tanh(gelu(x @ w1) @ w2).
graph mlp_sq {
  input %x: f32[8, 8]
  param %w1: f32[8, 8]
  param %w2: f32[8, 8]
  %h: f32[8, 8] = matmul(%x, %w1)
  %g: f32[8, 8] = gelu(%h)
  %o: f32[8, 8] = matmul(%g, %w2)
  %y: f32[8, 8] = tanh(%o)
  output %y
}

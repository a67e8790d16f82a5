# Sequential Megatron-style MLP: y = gelu(x @ w1 + b1) @ w2 + b2
graph mlp {
  input %x: f32[batch, 64]
  param %w1: f32[64, 256]
  param %b1: f32[256]
  param %w2: f32[256, 64]
  param %b2: f32[64]
  %h: f32[batch, 256] = matmul(%x, %w1)
  %hb: f32[batch, 256] = add(%h, %b1)
  %g: f32[batch, 256] = gelu(%hb) {approximate = "tanh"}
  %o: f32[batch, 64] = matmul(%g, %w2)
  %y: f32[batch, 64] = add(%o, %b2)
  output %y
}

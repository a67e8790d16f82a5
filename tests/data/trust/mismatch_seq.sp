graph mlp {
  input %x: f32[4, 24]
  param %w1: f32[24, 48]
  param %w2: f32[48, 24]
  %h = matmul(%x, %w1)
  %g = silu(%h)
  %y = matmul(%g, %w2)
  output %y
}

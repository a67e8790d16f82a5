# Two-layer MLP (no biases), tokens x hidden.
graph mlp {
  input %x: f32[8, 16]
  param %w1: f32[16, 32]
  param %w2: f32[32, 16]
  %h: f32[8, 32] = matmul(%x, %w1)  @ "mlp.py":10
  %g: f32[8, 32] = gelu(%h)  @ "mlp.py":11
  %y: f32[8, 16] = matmul(%g, %w2)  @ "mlp.py":12
  output %y
}

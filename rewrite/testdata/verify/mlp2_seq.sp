# MLP followed by a layer norm: partial sums must be reduced before it.
graph mlp2 {
  input %x: f32[8, 16]
  param %w1: f32[16, 32]
  param %w2: f32[32, 16]
  %h: f32[8, 32] = matmul(%x, %w1)
  %g: f32[8, 32] = gelu(%h)
  %y: f32[8, 16] = matmul(%g, %w2)
  %n: f32[8, 16] = layer_norm(%y)  @ "mlp.py":20
  output %n
}

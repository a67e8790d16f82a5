# Two scores per token, gated by z: y = tanh((x @ w) * z).
graph scores {
  input %x: f32[8, 8]
  input %z: f32[8, 2]
  param %w: f32[8, 2]
  %s: f32[8, 2] = matmul(%x, %w)
  %m: f32[8, 2] = mul(%s, %z)
  %y: f32[8, 2] = tanh(%m)
  output %y
}

graph lin {
  input %x: f32[8, 8]
  param %w: f32[8, 8]
  %h: f32[8, 8] = matmul(%x, %w)
  %y: f32[8, 8] = tanh(%h)
  output %y
}

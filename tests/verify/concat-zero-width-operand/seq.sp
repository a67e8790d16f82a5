# A concat whose second operand has no columns (an empty adapter or padding
# slot), then a linear layer.
graph zero_width {
  input %x: f32[4, 6]
  input %e: f32[4, 0]
  param %w: f32[6, 8]
  %y: f32[4, 6] = concat(%x, %e) {axis = 1}
  %z: f32[4, 8] = matmul(%y, %w)
  output %z
}

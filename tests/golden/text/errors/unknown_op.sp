graph g {
  input %x: f32[4, 8]
  param %w: f32[8, 2]
  %y = matmull(%x, %w)
  output %y
}

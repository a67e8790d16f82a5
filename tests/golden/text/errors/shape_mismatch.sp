graph g {
  input %x: f32[batch, 768]
  param %w: f32[1024, 10]
  %y = matmul(%x, %w)
  output %y
}

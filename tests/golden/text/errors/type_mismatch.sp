graph g {
  input %x: f32[batch, 768]
  param %w: f32[768, 3072]
  %h: f32[batch, 768] = matmul(%x, %w)
  output %h
}

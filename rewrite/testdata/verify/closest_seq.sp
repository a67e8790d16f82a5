graph g {
  input %x: f32[2, 4, 8]
  param %w: f32[8, 12]
  %a: f32[2, 4, 12] = matmul(%x, %w)
  %b: f32[2, 4, 12] = exp(%a)
  %c: f32[2, 4, 12] = tanh(%b)
  output %c
}

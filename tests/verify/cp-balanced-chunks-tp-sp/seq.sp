# A column-parallel projection and activation over 16 tokens.
graph s {
  input %x: f32[16, 6]
  param %w: f32[6, 4]
  %p: f32[16, 4] = matmul(%x, %w)
  %r: f32[16, 4] = relu(%p)
  output %r
}

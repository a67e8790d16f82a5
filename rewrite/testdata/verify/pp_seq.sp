graph two_layers {
  input %x: f32[4, 16]
  param %w0: f32[16, 16]
  param %w1: f32[16, 8]
  %h: f32[4, 16] = matmul(%x, %w0)
  %r: f32[4, 16] = relu(%h)
  %logits: f32[4, 8] = matmul(%r, %w1)
  output %logits
}

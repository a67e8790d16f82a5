# A (shared-expert) MLP on 8 tokens.
graph shared_expert {
  input %x: f32[8, 8]
  param %w1: f32[8, 16]
  param %w2: f32[16, 8]
  %h: f32[8, 16] = matmul(%x, %w1)
  %g: f32[8, 16] = gelu(%h)
  %o: f32[8, 8] = matmul(%g, %w2)
  output %o
}

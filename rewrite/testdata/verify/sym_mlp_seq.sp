# An MLP over symbolic batch and seq (a dynamic export): tokens flattened to
# batch*seq rows, hidden split into 4 heads of 8 around the gelu.
graph mlp {
  input %x: f32[batch, seq, 16]
  param %w1: f32[16, 32]
  param %w2: f32[32, 16]
  %x2: f32[batch*seq, 16] = reshape(%x) {shape = [batch*seq, 16]}
  %h: f32[batch*seq, 32] = matmul(%x2, %w1)
  %h4: f32[batch*seq, 4, 8] = reshape(%h) {shape = [batch*seq, 4, 8]}
  %g: f32[batch*seq, 4, 8] = gelu(%h4)
  %g2: f32[batch*seq, 32] = reshape(%g) {shape = [batch*seq, 32]}
  %y2: f32[batch*seq, 16] = matmul(%g2, %w2)
  %y: f32[batch, seq, 16] = reshape(%y2) {shape = [batch, seq, 16]}
  output %y
}

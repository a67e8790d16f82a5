# Mean-pooling over the sequence, then a projection.
graph pool {
  input %x: f32[8, 8]
  param %w: f32[8, 4]
  %pooled: f32[1, 8] = reduce_mean(%x) {axes = [0]}
  %o: f32[1, 4] = matmul(%pooled, %w)
  %t: f32[1, 4] = tanh(%o)
  output %t
}

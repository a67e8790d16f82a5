# MLP with dropout at ratio 0.2 on the hidden activation (stream s1) and 0.25
# on the output (stream s2); a stream is the uniform draw the mask is cut from.
graph mlp_dropout {
  input %x: f32[8, 8]
  input %s1: f32[8, 16]
  input %s2: f32[8, 8]
  param %w1: f32[8, 16]
  param %w2: f32[16, 8]
  %h: f32[8, 16] = matmul(%x, %w1)
  %g: f32[8, 16] = gelu(%h)
  %d1: f32[8, 16], %m1: bool[8, 16] = dropout(%g, %s1) {ratio = 0.2}
  %o: f32[8, 8] = matmul(%d1, %w2)
  %d2: f32[8, 8], %m2: bool[8, 8] = dropout(%o, %s2) {ratio = 0.25}
  output %d2
}

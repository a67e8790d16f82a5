# The MLP of bias-added-every-rank at 16 ranks (4 hidden columns a rank):
# checked with ranks folded, and its buggy twin refuted through the fold.
graph mlp_bias {
  input %x: f32[8, 8]
  param %w1: f32[8, 64]
  param %w2: f32[64, 8]
  param %b: f32[8]
  %h: f32[8, 64] = matmul(%x, %w1)
  %g: f32[8, 64] = gelu(%h)
  %o: f32[8, 8] = matmul(%g, %w2)
  %ob: f32[8, 8] = add(%o, %b)
  %y: f32[8, 8] = tanh(%ob)
  output %y
}

# The bias added on every rank before the all_reduce: 16 times the bias.
program mlp_bias_tp16 {
  world 16
  mesh [tp = 16]
  rank 0..15 {
    input %x: f32[8, 8]
    param %w1: f32[8, 4]
    param %w2: f32[4, 8]
    param %b: f32[8]
    %h: f32[8, 4] = matmul(%x, %w1)
    %g: f32[8, 4] = gelu(%h)
    %p: f32[8, 8] = matmul(%g, %w2)
    %pb: f32[8, 8] = add(%p, %b)
    %ob: f32[8, 8] = all_reduce(%pb) {group = "tp"}
    %y: f32[8, 8] = tanh(%ob)
    output %y
  }
}

# Row-parallel w2 over 16 ranks: the bias is added once, after the all_reduce.
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
    %o: f32[8, 8] = all_reduce(%p) {group = "tp"}
    %ob: f32[8, 8] = add(%o, %b)
    %y: f32[8, 8] = tanh(%ob)
    output %y
  }
}

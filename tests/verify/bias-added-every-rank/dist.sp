# Row-parallel w2: the bias is added once, after the all_reduce.
program mlp_bias_tp2 {
  world 2
  mesh [tp = 2]
  rank 0..1 {
    input %x: f32[8, 8]
    param %w1: f32[8, 8]
    param %w2: f32[8, 8]
    param %b: f32[8]
    %h: f32[8, 8] = matmul(%x, %w1)
    %g: f32[8, 8] = gelu(%h)
    %p: f32[8, 8] = matmul(%g, %w2)
    %o: f32[8, 8] = all_reduce(%p) {group = "tp"}
    %ob: f32[8, 8] = add(%o, %b)
    %y: f32[8, 8] = tanh(%ob)
    output %y
  }
}

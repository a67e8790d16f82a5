# BUG: reduce_scatter along the hidden dim 1, then viewed as [4, 8] tokens.
program mlp_ln_sp2 {
  world 2
  mesh [tp = 2]
  rank 0..1 {
    input %x: f32[8, 8]
    param %w1: f32[8, 8]
    param %w2: f32[8, 8]
    %h: f32[8, 8] = matmul(%x, %w1)
    %g: f32[8, 8] = gelu(%h)
    %p: f32[8, 8] = matmul(%g, %w2)
    %o1: f32[8, 4] = reduce_scatter(%p) {group = "tp", dim = 1}
    %o: f32[4, 8] = reshape(%o1) {shape = [4, 8]}
    %y: f32[4, 8] = layer_norm(%o)
    output %y
  }
}

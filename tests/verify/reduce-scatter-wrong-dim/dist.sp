# Sequence parallel TP=2: the row-parallel partial sums are reduce-scattered
# along the token dim 0; the layer norm runs on each rank's token slice.
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
    %o: f32[4, 8] = reduce_scatter(%p) {group = "tp", dim = 0}
    %y: f32[4, 8] = layer_norm(%o)
    output %y
  }
}

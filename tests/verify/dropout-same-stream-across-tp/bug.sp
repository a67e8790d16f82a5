# BUG: the column-parallel dropout draws from the replicated stream, so both
# tp ranks cut the same mask for different columns.
program mlp_dropout_tp2 {
  world 2
  mesh [tp = 2]
  rank 0..1 {
    input %x: f32[8, 8]
    input %s_tp: f32[8, 8]
    input %s_rep: f32[8, 8]
    param %w1: f32[8, 8]
    param %w2: f32[8, 8]
    %h: f32[8, 8] = matmul(%x, %w1)
    %g: f32[8, 8] = gelu(%h)
    %d1: f32[8, 8], %m1: bool[8, 8] = dropout(%g, %s_rep)
    %p: f32[8, 8] = matmul(%d1, %w2)
    %o: f32[8, 8] = all_reduce(%p) {group = "tp"}
    %d2: f32[8, 8], %m2: bool[8, 8] = dropout(%o, %s_rep)
    output %d2
  }
}

# BUG: the shared expert is TP-sharded but runs on the local token slice and
# all-reduces, summing partial products of different tokens.
program shared_expert_sp2 {
  world 2
  mesh [tp = 2]
  rank 0..1 {
    input %x: f32[4, 8]
    param %w1: f32[8, 8]
    param %w2: f32[8, 8]
    %h: f32[4, 8] = matmul(%x, %w1)
    %g: f32[4, 8] = gelu(%h)
    %p: f32[4, 8] = matmul(%g, %w2)
    %o: f32[4, 8] = all_reduce(%p) {group = "tp"}
    output %o
  }
}

# TP=2 with two RNG streams: s_tp differs across tp ranks (it is the rank's
# slice of the sequential stream; used on column-parallel activations),
# s_rep is the same on every tp rank (used on the replicated output).
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
    %d1: f32[8, 8], %m1: bool[8, 8] = dropout(%g, %s_tp) {ratio = 0.2}
    %p: f32[8, 8] = matmul(%d1, %w2)
    %o: f32[8, 8] = all_reduce(%p) {group = "tp"}
    %d2: f32[8, 8], %m2: bool[8, 8] = dropout(%o, %s_rep) {ratio = 0.25}
    output %d2
  }
}

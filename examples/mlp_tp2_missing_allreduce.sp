# BUG (BUGS.md 1): the TP=2 MLP of mlp_tp2.sp without the all-reduce after
# the row-parallel matmul: each rank adds the bias to its partial sums.
program mlp_tp2_bug {
  world 2
  mesh [tp = 2]
  rank 0..1 {
    input %x: f32[batch, 64]
    param %w1: f32[64, 128]
    param %b1: f32[128]
    param %w2: f32[128, 64]
    param %b2: f32[64]
    %h: f32[batch, 128] = matmul(%x, %w1)
    %hb: f32[batch, 128] = add(%h, %b1)
    %g: f32[batch, 128] = gelu(%hb) {approximate = "tanh"}
    %o: f32[batch, 64] = matmul(%g, %w2)
    %y: f32[batch, 64] = add(%o, %b2)
    output %y
  }
}

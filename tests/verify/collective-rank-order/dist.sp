# Column-parallel w1, the activation shards all-gathered over tp in rank
# order, then a replicated w2.
program mlp_gather_tp2 {
  world 2
  mesh [tp = 2]
  rank 0..1 {
    input %x: f32[8, 8]
    param %w1: f32[8, 8]
    param %w2: f32[16, 8]
    %h: f32[8, 8] = matmul(%x, %w1)
    %g: f32[8, 8] = gelu(%h)
    %gg: f32[8, 16] = all_gather(%g) {group = "tp", dim = 1}
    %o: f32[8, 8] = matmul(%gg, %w2)
    %y: f32[8, 8] = tanh(%o)
    output %y
  }
}

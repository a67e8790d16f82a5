# Megatron TP=2: column-parallel w1, row-parallel w2, an all_gather where the all_reduce belongs (bug 2).
program mlp_tp2_allgather {
  world 2
  mesh [tp = 2]
  rank 0..1 {
    input %x: f32[8, 16]
    param %w1: f32[16, 16]
    param %w2: f32[16, 16]
    %h: f32[8, 16] = matmul(%x, %w1)
    %g: f32[8, 16] = gelu(%h)
    %o: f32[8, 16] = matmul(%g, %w2)
    %y: f32[8, 32] = all_gather(%o) {group = "tp", dim = 1}
    output %y
  }
}

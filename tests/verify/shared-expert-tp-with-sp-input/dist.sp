# The input is sequence-split over tp; the TP-sharded shared expert first
# all-gathers the tokens and reduce-scatters its output (Megatron SP).
program shared_expert_sp2 {
  world 2
  mesh [tp = 2]
  rank 0..1 {
    input %x: f32[4, 8]
    param %w1: f32[8, 8]
    param %w2: f32[8, 8]
    %xg: f32[8, 8] = all_gather(%x) {group = "tp", dim = 0}
    %h: f32[8, 8] = matmul(%xg, %w1)
    %g: f32[8, 8] = gelu(%h)
    %p: f32[8, 8] = matmul(%g, %w2)
    %o: f32[4, 8] = reduce_scatter(%p) {group = "tp", dim = 0}
    output %o
  }
}

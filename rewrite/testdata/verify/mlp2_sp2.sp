# Megatron sequence parallel, TP=2: tokens split outside the MLP, all_gather
# before the column-parallel layer, reduce_scatter after the row-parallel one.
program mlp2_sp2 {
  world 2
  mesh [tp = 2]
  rank 0..1 {
    input %x: f32[4, 16]
    param %w1: f32[16, 16]
    param %w2: f32[16, 16]
    %xg: f32[8, 16] = all_gather(%x) {group = "tp", dim = 0}
    %h: f32[8, 16] = matmul(%xg, %w1)
    %g: f32[8, 16] = gelu(%h)
    %o: f32[8, 16] = matmul(%g, %w2)
    %y: f32[4, 16] = reduce_scatter(%o) {group = "tp", dim = 0}
    %n: f32[4, 16] = layer_norm(%y)
    output %n
  }
}

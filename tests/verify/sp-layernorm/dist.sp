# Megatron sequence parallel TP=2: layer norm and residual on the token
# slice, all_gather into the TP MLP, reduce_scatter out of it.
program ln_mlp_sp2 {
  world 2
  mesh [tp = 2]
  rank 0..1 {
    input %x: f32[4, 8]
    param %gamma: f32[8]
    param %beta: f32[8]
    param %w1: f32[8, 8]
    param %w2: f32[8, 8]
    %n: f32[4, 8] = layer_norm(%x, %gamma, %beta)
    %ng: f32[8, 8] = all_gather(%n) {group = "tp", dim = 0}
    %h: f32[8, 8] = matmul(%ng, %w1)
    %g: f32[8, 8] = gelu(%h)
    %p: f32[8, 8] = matmul(%g, %w2)
    %o: f32[4, 8] = reduce_scatter(%p) {group = "tp", dim = 0}
    %y: f32[4, 8] = add(%x, %o)
    output %y
  }
}

# Sequence parallel TP=2: both norms and the residual on the token slice,
# all_gather into the TP MLP, reduce_scatter out of it; each norm keeps the
# epsilon of S.
program norm_eps_mlp_sp2 {
  world 2
  mesh [tp = 2]
  rank 0..1 {
    input %x: f32[4, 8]
    param %g_in: f32[8]
    param %gamma: f32[8]
    param %beta: f32[8]
    param %w1: f32[8, 8]
    param %w2: f32[8, 8]
    %n: f32[4, 8] = rms_norm(%x, %g_in) {epsilon = 1e-6}
    %ng: f32[8, 8] = all_gather(%n) {group = "tp", dim = 0}
    %h: f32[8, 8] = matmul(%ng, %w1)
    %a: f32[8, 8] = silu(%h)
    %p: f32[8, 8] = matmul(%a, %w2)
    %o: f32[4, 8] = reduce_scatter(%p) {group = "tp", dim = 0}
    %r: f32[4, 8] = add(%x, %o)
    %y: f32[4, 8] = layer_norm(%r, %gamma, %beta) {epsilon = 0.001}
    output %y
  }
}

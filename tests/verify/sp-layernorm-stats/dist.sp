# Sequence parallel TP=2: each rank normalizes its 4 of the 8 positions and
# saves the statistics of its 4*2 rows.
program ln_stats_sp2 {
  world 2
  mesh [tp = 2]
  rank 0..1 {
    input %x: f32[4, 2, 6]
    param %gamma: f32[6]
    param %beta: f32[6]
    %y: f32[4, 2, 6] = layer_norm(%x, %gamma, %beta) {epsilon = 1e-5}
    %m: f32[4, 2, 1] = reduce_mean(%x) {axes = [2], keepdims = 1}
    %c: f32[4, 2, 6] = sub(%x, %m)
    %c2: f32[4, 2, 6] = mul(%c, %c)
    %var: f32[4, 2, 1] = reduce_mean(%c2) {axes = [2], keepdims = 1}
    %e: f32[] = constant() {value = dense<f32[], [1e-5]>}
    %ve: f32[4, 2, 1] = add(%var, %e)
    %r: f32[4, 2, 1] = rsqrt(%ve)
    %mean: f32[8] = reshape(%m) {shape = [8]}
    %invvar: f32[8] = reshape(%r) {shape = [8]}
    output %y
    output %mean
    output %invvar
  }
}

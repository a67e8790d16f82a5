# BUG: each rank clips with the norm of its own shard.
program clip_tp2 {
  world 2
  mesh [tp = 2]
  rank 0..1 {
    input %g: f32[8, 8]
    %sq: f32[8, 8] = mul(%g, %g)
    %ss: f32[] = reduce_sum(%sq) {keepdims = 0}
    %norm: f32[] = sqrt(%ss)
    %maxn: f32[] = constant() {value = dense<f32[], [0.5]>}
    %one: f32[] = constant() {value = dense<f32[], [1.0]>}
    %ratio: f32[] = div(%maxn, %norm)
    %coef: f32[] = min(%ratio, %one)
    %gc: f32[8, 8] = mul(%g, %coef)
    output %gc, %norm
  }
}

# TP=2: w1 column-parallel, pow on each rank's columns, w2 row-parallel,
# partial products never summed (the all_reduce is missing).
program pow_mlp_tp2 {
  world 2
  mesh [tp = 2]
  rank 0..1 {
    input %x: f32[2, 4, 8]
    param %w1: f32[8, 6]
    param %w2: f32[6, 8]
    %h: f32[2, 4, 6] = matmul(%x, %w1)
    %c: f32[] = constant() {value = dense<f32[], [2.0]>}
    %p: f32[2, 4, 6] = pow(%h, %c)
    %zp: f32[2, 4, 8] = matmul(%p, %w2)
    %z: f32[2, 4, 8] = identity(%zp)
    output %z
  }
}

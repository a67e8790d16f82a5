# Column-parallel w (one score column per rank); the shards are all-gathered.
program scores_tp2 {
  world 2
  mesh [tp = 2]
  rank 0..1 {
    input %x: f32[8, 8]
    input %z: f32[8, 2]
    param %w: f32[8, 1]
    %s: f32[8, 1] = matmul(%x, %w)
    %sg: f32[8, 2] = all_gather(%s) {group = "tp", dim = 1}
    %m: f32[8, 2] = mul(%sg, %z)
    %y: f32[8, 2] = tanh(%m)
    output %y
  }
}

# BUG: the shards are gathered along dim 0, then viewed as [2, 8, 4].
program unary3_tp2_wrong_dim {
  world 2
  mesh [tp = 2]
  rank 0..1 {
    input %x: f32[2, 4, 4]
    %t: f32[2, 4, 4] = silu(%x)
    %s: f32[2, 4, 4] = sin(%t)
    %g: f32[4, 4, 4] = all_gather(%s) {group = "tp", dim = 0}
    %y: f32[2, 8, 4] = reshape(%g) {shape = [2, 8, 4]}
    output %y
  }
}

# The activation split along dim 1 of three: each rank applies silu and sin
# to its shard, an all_gather on dim 1 rebuilds the result.
program unary3_tp2 {
  world 2
  mesh [tp = 2]
  rank 0..1 {
    input %x: f32[2, 4, 4]
    %t: f32[2, 4, 4] = silu(%x)
    %s: f32[2, 4, 4] = sin(%t)
    %y: f32[2, 8, 4] = all_gather(%s) {group = "tp", dim = 1}
    output %y
  }
}

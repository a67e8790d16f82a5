# BUG: no all_gather; each rank's shard is doubled up to the full shape by
# concatenating it with itself.
program unary3_tp2_no_gather {
  world 2
  mesh [tp = 2]
  rank 0..1 {
    input %x: f32[2, 4, 4]
    %t: f32[2, 4, 4] = silu(%x)
    %s: f32[2, 4, 4] = sin(%t)
    %y: f32[2, 8, 4] = concat(%s, %s) {axis = 1}
    output %y
  }
}

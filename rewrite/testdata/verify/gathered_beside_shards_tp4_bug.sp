# Buggy twin: b is exponentiated before the add.
program gathered_beside_shards_tp4 {
  world 4
  mesh [tp = 4]
  rank 0..3 {
    input %a: f32[2, 1, 6]
    input %b: f32[2, 1, 6]
    param %w: f32[6, 6]
    %c: f32[2, 1, 6] = exp(%a)
    %g: f32[8, 1, 6] = all_gather(%c) {group = "tp"}
    %m: f32[8, 1, 6] = matmul(%g, %w)
    %e: f32[2, 1, 6] = exp(%b)
    %y: f32[2, 1, 6] = add(%c, %e)
    output %y
    output %m
  }
}

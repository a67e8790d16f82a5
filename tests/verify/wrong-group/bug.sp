# BUG: the row-parallel partial sums are all-reduced over the dp group
# (other tokens, same weight shard) instead of the tp group.
program mlp_dp2_tp2 {
  world 4
  mesh [dp = 2, tp = 2]
  rank 0..3 {
    input %x: f32[4, 8]
    param %w1: f32[8, 8]
    param %w2: f32[8, 8]
    %h: f32[4, 8] = matmul(%x, %w1)
    %g: f32[4, 8] = gelu(%h)
    %p: f32[4, 8] = matmul(%g, %w2)
    %o: f32[4, 8] = all_reduce(%p) {group = "dp"}
    %y: f32[4, 8] = tanh(%o)
    output %y
  }
}

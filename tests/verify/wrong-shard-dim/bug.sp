# BUG: w1 is cut along dim 0 as if it were row-parallel (the layout of a
# torch [out, in] weight) and transposed to fit the column-parallel matmul.
program mlp_sq_tp2 {
  world 2
  mesh [tp = 2]
  rank 0 {
    input %x: f32[8, 8]
    param %w1: f32[8, 8]
    param %w2: f32[8, 8]
    %w1r: f32[4, 8] = slice(%w1) {starts = [0], ends = [4], axes = [0]}
    %w1s: f32[8, 4] = transpose(%w1r) {perm = [1, 0]}
    %w2s: f32[4, 8] = slice(%w2) {starts = [0], ends = [4], axes = [0]}
    %h: f32[8, 4] = matmul(%x, %w1s)
    %g: f32[8, 4] = gelu(%h)
    %p: f32[8, 8] = matmul(%g, %w2s)
    %o: f32[8, 8] = all_reduce(%p) {group = "tp"}
    %y: f32[8, 8] = tanh(%o)
    output %y
  }
  rank 1 {
    input %x: f32[8, 8]
    param %w1: f32[8, 8]
    param %w2: f32[8, 8]
    %w1r: f32[4, 8] = slice(%w1) {starts = [4], ends = [8], axes = [0]}
    %w1s: f32[8, 4] = transpose(%w1r) {perm = [1, 0]}
    %w2s: f32[4, 8] = slice(%w2) {starts = [4], ends = [8], axes = [0]}
    %h: f32[8, 4] = matmul(%x, %w1s)
    %g: f32[8, 4] = gelu(%h)
    %p: f32[8, 8] = matmul(%g, %w2s)
    %o: f32[8, 8] = all_reduce(%p) {group = "tp"}
    %y: f32[8, 8] = tanh(%o)
    output %y
  }
}

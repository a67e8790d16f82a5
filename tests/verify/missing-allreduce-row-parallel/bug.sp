# BUG: no all_reduce after the row-parallel matmul; tanh sees partial sums.
program mlp_tp2 {
  world 2
  mesh [tp = 2]
  rank 0..1 {
    input %x: f32[8, 8]
    param %w1: f32[8, 8]
    param %w2: f32[8, 8]
    %h: f32[8, 8] = matmul(%x, %w1)
    %g: f32[8, 8] = gelu(%h)
    %o: f32[8, 8] = matmul(%g, %w2)
    %y: f32[8, 8] = tanh(%o)
    output %y
  }
}

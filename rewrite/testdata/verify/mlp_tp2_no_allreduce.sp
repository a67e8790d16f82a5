program mlp_tp2_no_allreduce {
  world 2
  mesh [tp = 2]
  rank 0..1 {
    input %x: f32[8, 16]
    param %w1: f32[16, 16]
    param %w2: f32[16, 16]
    %h: f32[8, 16] = matmul(%x, %w1)
    %g: f32[8, 16] = gelu(%h)
    %y: f32[8, 16] = matmul(%g, %w2)
    output %y
  }
}

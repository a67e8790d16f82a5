# Megatron TP=2: column-parallel w1, row-parallel w2, all_reduce of the
# partial sums before the non-linearity.
program mlp_tp2 {
  world 2
  mesh [tp = 2]
  rank 0..1 {
    input %x: f32[8, 8]
    param %w1: f32[8, 8]
    param %w2: f32[8, 8]
    %h: f32[8, 8] = matmul(%x, %w1)
    %g: f32[8, 8] = gelu(%h)
    %p: f32[8, 8] = matmul(%g, %w2)
    %o: f32[8, 8] = all_reduce(%p) {group = "tp"}
    %y: f32[8, 8] = tanh(%o)
    output %y
  }
}

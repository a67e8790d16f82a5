# The same MLP, tensor parallel over 2 ranks: w1/b1 column parallel (split
# dim 1), w2 row parallel (split dim 0), partial sums all-reduced over tp,
# then the replicated bias.
program mlp_tp2 {
  world 2
  mesh [tp = 2]
  rank 0..1 {
    input %x: f32[batch, 64]
    param %w1: f32[64, 128]
    param %b1: f32[128]
    param %w2: f32[128, 64]
    param %b2: f32[64]
    %h: f32[batch, 128] = matmul(%x, %w1)
    %hb: f32[batch, 128] = add(%h, %b1)
    %g: f32[batch, 128] = gelu(%hb) {approximate = "tanh"}
    %o: f32[batch, 64] = matmul(%g, %w2)
    %r: f32[batch, 64] = all_reduce(%o) {group = "tp"}
    %y: f32[batch, 64] = add(%r, %b2)
    output %y
  }
}

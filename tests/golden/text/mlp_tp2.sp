# Megatron tensor parallelism on 2 ranks: column-parallel first layer,
# row-parallel second layer, one all_reduce. Both ranks run the same body.
program mlp_tp2 {
  world 2
  mesh [tp = 2]
  rank 0..1 {
    input %x: f32[batch, 768]
    param %w1: f32[768, 1536]      # columns of w1 owned by this rank
    param %w2: f32[1536, 768]      # rows of w2 owned by this rank
    %h: f32[batch, 1536] = matmul(%x, %w1)
    %g: f32[batch, 1536] = gelu(%h)
    %o: f32[batch, 768] = matmul(%g, %w2)
    %y: f32[batch, 768] = all_reduce(%o) {group = "tp"}
    output %y
  }
}

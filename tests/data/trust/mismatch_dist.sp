# TP 2 MLP, each rank slices its shard; rank 1's all_reduce averages while
# rank 0's sums (a collective whose ranks disagree on the reduce op).
program mlp_sl {
  world 2
  mesh [tp = 2]
  rank 0 {
    input %x: f32[4, 24]
    param %w1: f32[24, 48]
    param %w2: f32[48, 24]
    %w1s = slice(%w1) {starts = [0], ends = [24], axes = [1]}
    %w2s = slice(%w2) {starts = [0], ends = [24], axes = [0]}
    %h = matmul(%x, %w1s)
    %g = silu(%h)
    %o = matmul(%g, %w2s)
    %y = all_reduce(%o) {group = "tp"}
    output %y
  }
  rank 1 {
    input %x: f32[4, 24]
    param %w1: f32[24, 48]
    param %w2: f32[48, 24]
    %w1s = slice(%w1) {starts = [24], ends = [48], axes = [1]}
    %w2s = slice(%w2) {starts = [24], ends = [48], axes = [0]}
    %h = matmul(%x, %w1s)
    %g = silu(%h)
    %o = matmul(%g, %w2s)
    %y = all_reduce(%o) {group = "tp", reduce = "avg"}
    output %y
  }
}

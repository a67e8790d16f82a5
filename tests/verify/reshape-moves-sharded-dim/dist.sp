# TP=2: y is sharded on hidden (dim 2); before the flatten merges hidden
# into seq*hidden it is all-gathered, and each rank keeps the flat slice that
# matches its row shard of w2.
program flat_head_tp2 {
  world 2
  mesh [tp = 2]
  rank 0 {
    input %x: f32[2, 4, 8]
    param %w1: f32[8, 4]
    param %w2: f32[16, 4]
    %y: f32[2, 4, 4] = matmul(%x, %w1)
    %yg: f32[2, 4, 8] = all_gather(%y) {group = "tp", dim = 2}
    %z: f32[2, 32] = reshape(%yg) {shape = [2, 32]}
    %zs: f32[2, 16] = slice(%z) {starts = [0], ends = [16], axes = [1]}
    %p: f32[2, 4] = matmul(%zs, %w2)
    %o: f32[2, 4] = all_reduce(%p) {group = "tp"}
    %t: f32[2, 4] = tanh(%o)
    output %t
  }
  rank 1 {
    input %x: f32[2, 4, 8]
    param %w1: f32[8, 4]
    param %w2: f32[16, 4]
    %y: f32[2, 4, 4] = matmul(%x, %w1)
    %yg: f32[2, 4, 8] = all_gather(%y) {group = "tp", dim = 2}
    %z: f32[2, 32] = reshape(%yg) {shape = [2, 32]}
    %zs: f32[2, 16] = slice(%z) {starts = [16], ends = [32], axes = [1]}
    %p: f32[2, 4] = matmul(%zs, %w2)
    %o: f32[2, 4] = all_reduce(%p) {group = "tp"}
    %t: f32[2, 4] = tanh(%o)
    output %t
  }
}

# BUG: the hidden-sharded y is flattened locally to [2, 16]: the view merges
# the sharded dim with seq, so rank r's flat columns are not the slice
# [16r, 16r+16) of the global flatten that its w2 rows expect.
program flat_head_tp2 {
  world 2
  mesh [tp = 2]
  rank 0..1 {
    input %x: f32[2, 4, 8]
    param %w1: f32[8, 4]
    param %w2: f32[16, 4]
    %y: f32[2, 4, 4] = matmul(%x, %w1)
    %z: f32[2, 16] = reshape(%y) {shape = [2, 16]}
    %p: f32[2, 4] = matmul(%z, %w2)
    %o: f32[2, 4] = all_reduce(%p) {group = "tp"}
    %t: f32[2, 4] = tanh(%o)
    output %t
  }
}

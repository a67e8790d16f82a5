# Entering a sequence-parallel region: h is replicated on both tp ranks, so
# each rank keeps its own token slice (a split, no communication).
program lin_sp2 {
  world 2
  mesh [tp = 2]
  rank 0 {
    input %x: f32[8, 8]
    param %w: f32[8, 8]
    %h: f32[8, 8] = matmul(%x, %w)
    %hs: f32[4, 8] = slice(%h) {starts = [0], ends = [4], axes = [0]}
    %y: f32[4, 8] = tanh(%hs)
    output %y
  }
  rank 1 {
    input %x: f32[8, 8]
    param %w: f32[8, 8]
    %h: f32[8, 8] = matmul(%x, %w)
    %hs: f32[4, 8] = slice(%h) {starts = [4], ends = [8], axes = [0]}
    %y: f32[4, 8] = tanh(%hs)
    output %y
  }
}

# BUG: reduce_scatter of an already replicated tensor: every value is
# multiplied by the group size (2).
program lin_sp2 {
  world 2
  mesh [tp = 2]
  rank 0..1 {
    input %x: f32[8, 8]
    param %w: f32[8, 8]
    %h: f32[8, 8] = matmul(%x, %w)
    %hs: f32[4, 8] = reduce_scatter(%h) {group = "tp", dim = 0}
    %y: f32[4, 8] = tanh(%hs)
    output %y
  }
}

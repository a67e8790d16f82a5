program col_tp2 {
  world 2
  mesh [tp = 2]
  rank 0..1 {
    input %x: f32[8, 16]
    param %w1: f32[16, 16]
    %hl: f32[8, 16] = matmul(%x, %w1)
    %h: f32[8, 32] = all_gather(%hl) {group = "tp", dim = 1}
    output %h
  }
}

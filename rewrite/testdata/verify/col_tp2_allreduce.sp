program col_tp2_allreduce {
  world 2
  mesh [tp = 2]
  rank 0..1 {
    input %x: f32[8, 16]
    param %w1: f32[16, 16]
    %hl: f32[8, 16] = matmul(%x, %w1)
    %h: f32[8, 16] = all_reduce(%hl) {group = "tp"}
    output %h
  }
}

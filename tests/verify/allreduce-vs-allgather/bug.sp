# BUG: all_reduce where an all_gather belongs; the [8, 1] sum broadcasts
# silently against z in the mul.
program scores_tp2 {
  world 2
  mesh [tp = 2]
  rank 0..1 {
    input %x: f32[8, 8]
    input %z: f32[8, 2]
    param %w: f32[8, 1]
    %s: f32[8, 1] = matmul(%x, %w)
    %sg: f32[8, 1] = all_reduce(%s) {group = "tp"}
    %m: f32[8, 2] = mul(%sg, %z)
    %y: f32[8, 2] = tanh(%m)
    output %y
  }
}

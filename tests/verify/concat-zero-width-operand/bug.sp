# TP=2 row-parallel: each rank holds half of the columns of x and the rows
# of w, concatenates its (empty) e, and the partial products are never summed (the all_reduce is missing).
program zero_width_tp2 {
  world 2
  mesh [tp = 2]
  rank 0..1 {
    input %x: f32[4, 3]
    input %e: f32[4, 0]
    param %w: f32[3, 8]
    %y: f32[4, 3] = concat(%x, %e) {axis = 1}
    %p: f32[4, 8] = matmul(%y, %w)
    %z: f32[4, 8] = identity(%p)
    output %z
  }
}

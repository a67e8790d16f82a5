# TP 16: a and b split along their last dim, w1 and w2 along their first;
# the all_reduce of the summed products left out: no edit after 't' alone
# repairs it (gelu reads the partial sums too); one after 's' does.
program branches_tp16_no_allreduce {
  world 16
  mesh [tp = 16]
  rank 0..15 {
    input %a: f32[8, 2]
    input %b: f32[8, 2]
    param %w1: f32[2, 12]
    param %w2: f32[2, 12]
    param %c: f32[12]
    %p1: f32[8, 12] = matmul(%a, %w1)
    %p2: f32[8, 12] = matmul(%b, %w2)
    %s: f32[8, 12] = add(%p1, %p2)
    %t: f32[8, 12] = neg(%s)
    %u: f32[8, 12] = add(%t, %c)
    %v: f32[8, 12] = gelu(%s)
    output %u
    output %v
  }
}

# Sequence parallel: tokens split over tp, router weight replicated, its
# gradient all-reduced over tp.
program router_sp2 {
  world 2
  mesh [tp = 2]
  rank 0..1 {
    input %x: f32[4, 8]
    input %dp: f32[4, 4]
    param %wr: f32[8, 4]
    %logits: f32[4, 4] = matmul(%x, %wr)
    %p: f32[4, 4] = softmax(%logits)
    %pdp: f32[4, 4] = mul(%p, %dp)
    %s: f32[4, 1] = reduce_sum(%pdp) {axes = [1]}
    %c: f32[4, 4] = sub(%dp, %s)
    %dl: f32[4, 4] = mul(%p, %c)
    %xt: f32[8, 4] = transpose(%x) {perm = [1, 0]}
    %dwl: f32[8, 4] = matmul(%xt, %dl)
    %dwr: f32[8, 4] = all_reduce(%dwl) {group = "tp"}
    output %p, %dwr
  }
}

# Router: probs = softmax(x @ wr) over 4 experts, and the router weight
# gradient for an upstream gradient dp of the probs.
graph router_grad {
  input %x: f32[8, 8]
  input %dp: f32[8, 4]
  param %wr: f32[8, 4]
  %logits: f32[8, 4] = matmul(%x, %wr)
  %p: f32[8, 4] = softmax(%logits)
  %pdp: f32[8, 4] = mul(%p, %dp)
  %s: f32[8, 1] = reduce_sum(%pdp) {axes = [1]}
  %c: f32[8, 4] = sub(%dp, %s)
  %dl: f32[8, 4] = mul(%p, %c)
  %xt: f32[8, 8] = transpose(%x) {perm = [1, 0]}
  %dwr: f32[8, 4] = matmul(%xt, %dl)
  output %p, %dwr
}

# Attention over 4 heads (head-major q, k, v), a per-head output projection
# summed over heads, and a layer norm.
graph attn {
  input %q: f32[4, 8, 8]
  input %k: f32[4, 8, 8]
  input %v: f32[4, 8, 8]
  param %wo: f32[4, 8, 16]
  %kt: f32[4, 8, 8] = transpose(%k) {perm = [0, 2, 1]}
  %s: f32[4, 8, 8] = matmul(%q, %kt)
  %p: f32[4, 8, 8] = softmax(%s) {axis = -1}
  %o: f32[4, 8, 8] = matmul(%p, %v)
  %po: f32[4, 8, 16] = matmul(%o, %wo)
  %y: f32[8, 16] = reduce_sum(%po) {axes = [0], keepdims = 0}
  %n: f32[8, 16] = layer_norm(%y)
  output %n
}

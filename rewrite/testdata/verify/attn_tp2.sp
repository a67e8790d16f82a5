# Heads split over tp; the projection's partial sums are all-reduced.
program attn_tp2 {
  world 2
  mesh [tp = 2]
  rank 0..1 {
    input %q: f32[2, 8, 8]
    input %k: f32[2, 8, 8]
    input %v: f32[2, 8, 8]
    param %wo: f32[2, 8, 16]
    %kt: f32[2, 8, 8] = transpose(%k) {perm = [0, 2, 1]}
    %s: f32[2, 8, 8] = matmul(%q, %kt)
    %p: f32[2, 8, 8] = softmax(%s) {axis = -1}
    %o: f32[2, 8, 8] = matmul(%p, %v)
    %po: f32[2, 8, 16] = matmul(%o, %wo)
    %yp: f32[8, 16] = reduce_sum(%po) {axes = [0], keepdims = 0}
    %y: f32[8, 16] = all_reduce(%yp) {group = "tp"}
    %n: f32[8, 16] = layer_norm(%y)
    output %n
  }
}

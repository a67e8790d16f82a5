# Attention + MLP block, batch 2, seq 4, hidden 12, 3 heads of 4, ffn 5;
# fused QKV weight laid out [q | k | v] (each 12 columns, head-major inside).
graph block {
  input %x: f32[2, 4, 12]
  param %wqkv: f32[12, 36]
  param %wo: f32[12, 12]
  param %w1: f32[12, 5]
  param %w2: f32[5, 12]
  %qkv: f32[2, 4, 36] = matmul(%x, %wqkv)
  %q: f32[2, 4, 12], %k: f32[2, 4, 12], %v: f32[2, 4, 12] = split(%qkv) {axis = 2, sizes = [12, 12, 12]}
  %q4: f32[2, 4, 3, 4] = reshape(%q) {shape = [2, 4, 3, 4]}
  %k4: f32[2, 4, 3, 4] = reshape(%k) {shape = [2, 4, 3, 4]}
  %v4: f32[2, 4, 3, 4] = reshape(%v) {shape = [2, 4, 3, 4]}
  %qh: f32[2, 3, 4, 4] = transpose(%q4) {perm = [0, 2, 1, 3]}
  %kt: f32[2, 3, 4, 4] = transpose(%k4) {perm = [0, 2, 3, 1]}
  %vh: f32[2, 3, 4, 4] = transpose(%v4) {perm = [0, 2, 1, 3]}
  %scores: f32[2, 3, 4, 4] = matmul(%qh, %kt)
  %scale: f32[] = constant() {value = dense<f32[], [0.5]>}
  %ss: f32[2, 3, 4, 4] = mul(%scores, %scale)
  %p: f32[2, 3, 4, 4] = softmax(%ss)
  %a: f32[2, 3, 4, 4] = matmul(%p, %vh)
  %at: f32[2, 4, 3, 4] = transpose(%a) {perm = [0, 2, 1, 3]}
  %a3: f32[2, 4, 12] = reshape(%at) {shape = [2, 4, 12]}
  %o: f32[2, 4, 12] = matmul(%a3, %wo)
  %h: f32[2, 4, 5] = matmul(%o, %w1)
  %g: f32[2, 4, 5] = gelu(%h)
  %m: f32[2, 4, 12] = matmul(%g, %w2)
  %y: f32[2, 4, 12] = add(%o, %m)
  output %y
}

# Multi-head attention, batch 2, seq 4, hidden 8, 2 heads of 4, fused QKV
# weight laid out [q | k | v] (each 8 columns, head-major inside).
graph attn {
  input %x: f32[2, 4, 8]
  param %wqkv: f32[8, 24]
  param %wo: f32[8, 8]
  %qkv: f32[2, 4, 24] = matmul(%x, %wqkv)
  %q: f32[2, 4, 8], %k: f32[2, 4, 8], %v: f32[2, 4, 8] = split(%qkv) {axis = 2, sizes = [8, 8, 8]}
  %q4: f32[2, 4, 2, 4] = reshape(%q) {shape = [2, 4, 2, 4]}
  %k4: f32[2, 4, 2, 4] = reshape(%k) {shape = [2, 4, 2, 4]}
  %v4: f32[2, 4, 2, 4] = reshape(%v) {shape = [2, 4, 2, 4]}
  %qh: f32[2, 2, 4, 4] = transpose(%q4) {perm = [0, 2, 1, 3]}
  %kt: f32[2, 2, 4, 4] = transpose(%k4) {perm = [0, 2, 3, 1]}
  %vh: f32[2, 2, 4, 4] = transpose(%v4) {perm = [0, 2, 1, 3]}
  %scores: f32[2, 2, 4, 4] = matmul(%qh, %kt)
  %scale: f32[] = constant() {value = dense<f32[], [0.5]>}
  %ss: f32[2, 2, 4, 4] = mul(%scores, %scale)
  %p: f32[2, 2, 4, 4] = softmax(%ss)
  %a: f32[2, 2, 4, 4] = matmul(%p, %vh)
  %at: f32[2, 4, 2, 4] = transpose(%a) {perm = [0, 2, 1, 3]}
  %a3: f32[2, 4, 8] = reshape(%at) {shape = [2, 4, 8]}
  %o: f32[2, 4, 8] = matmul(%a3, %wo)
  output %o
}

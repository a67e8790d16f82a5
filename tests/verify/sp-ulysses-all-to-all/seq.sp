# Multi-head attention over 8 positions (hidden 32, 8 heads of 4).
graph attn {
  input %x: f32[8, 32]
  param %wq: f32[32, 32]
  param %wk: f32[32, 32]
  param %wv: f32[32, 32]
  param %wo: f32[32, 32]
  %q: f32[8, 32] = matmul(%x, %wq)
  %k: f32[8, 32] = matmul(%x, %wk)
  %v: f32[8, 32] = matmul(%x, %wv)
  %q3: f32[8, 8, 4] = reshape(%q) {shape = [8, 8, 4]}
  %k3: f32[8, 8, 4] = reshape(%k) {shape = [8, 8, 4]}
  %v3: f32[8, 8, 4] = reshape(%v) {shape = [8, 8, 4]}
  %qh: f32[8, 8, 4] = transpose(%q3) {perm = [1, 0, 2]}
  %kh: f32[8, 4, 8] = transpose(%k3) {perm = [1, 2, 0]}
  %vh: f32[8, 8, 4] = transpose(%v3) {perm = [1, 0, 2]}
  %s: f32[8, 8, 8] = matmul(%qh, %kh)
  %p: f32[8, 8, 8] = softmax(%s)
  %a: f32[8, 8, 4] = matmul(%p, %vh)
  %at: f32[8, 8, 4] = transpose(%a) {perm = [1, 0, 2]}
  %a2: f32[8, 32] = reshape(%at) {shape = [8, 32]}
  %o: f32[8, 32] = matmul(%a2, %wo)
  output %o
}

# Grouped-query attention: batch 2, seq 4, hidden 32, 8 query heads of 4
# sharing 2 KV heads (query heads 0-3 use KV head 0; 4-7 use KV head 1).
graph gqa {
  input %x: f32[2, 4, 32]
  param %wq: f32[32, 32]
  param %wk: f32[32, 8]
  param %wv: f32[32, 8]
  param %wo: f32[32, 32]
  %q: f32[2, 4, 32] = matmul(%x, %wq)
  %k: f32[2, 4, 8] = matmul(%x, %wk)
  %v: f32[2, 4, 8] = matmul(%x, %wv)
  %q4: f32[2, 4, 8, 4] = reshape(%q) {shape = [2, 4, 8, 4]}
  %k4: f32[2, 4, 2, 4] = reshape(%k) {shape = [2, 4, 2, 4]}
  %v4: f32[2, 4, 2, 4] = reshape(%v) {shape = [2, 4, 2, 4]}
  %k5: f32[2, 4, 2, 1, 4] = unsqueeze(%k4) {axes = [3]}
  %v5: f32[2, 4, 2, 1, 4] = unsqueeze(%v4) {axes = [3]}
  %ke: f32[2, 4, 2, 4, 4] = expand(%k5) {shape = [2, 4, 2, 4, 4]}
  %ve: f32[2, 4, 2, 4, 4] = expand(%v5) {shape = [2, 4, 2, 4, 4]}
  %kg: f32[2, 4, 8, 4] = reshape(%ke) {shape = [2, 4, 8, 4]}
  %vg: f32[2, 4, 8, 4] = reshape(%ve) {shape = [2, 4, 8, 4]}
  %qh: f32[2, 8, 4, 4] = transpose(%q4) {perm = [0, 2, 1, 3]}
  %kt: f32[2, 8, 4, 4] = transpose(%kg) {perm = [0, 2, 3, 1]}
  %vh: f32[2, 8, 4, 4] = transpose(%vg) {perm = [0, 2, 1, 3]}
  %scores: f32[2, 8, 4, 4] = matmul(%qh, %kt)
  %scale: f32[] = constant() {value = dense<f32[], [0.5]>}
  %ss: f32[2, 8, 4, 4] = mul(%scores, %scale)
  %p: f32[2, 8, 4, 4] = softmax(%ss)
  %a: f32[2, 8, 4, 4] = matmul(%p, %vh)
  %at: f32[2, 4, 8, 4] = transpose(%a) {perm = [0, 2, 1, 3]}
  %a3: f32[2, 4, 32] = reshape(%at) {shape = [2, 4, 32]}
  %o: f32[2, 4, 32] = matmul(%a3, %wo)
  output %o
}

# Causal multi-head attention over 16 tokens (hidden 128, 8 heads of 16).
graph s {
  input %x: f32[16, 128]
  input %mask: f32[16, 16]
  param %wq: f32[128, 128]
  param %wk: f32[128, 128]
  param %wv: f32[128, 128]
  param %wo: f32[128, 128]
  %q: f32[16, 128] = matmul(%x, %wq)
  %q4: f32[16, 8, 16] = reshape(%q) {shape = [16, 8, 16]}
  %k: f32[16, 128] = matmul(%x, %wk)
  %k4: f32[16, 8, 16] = reshape(%k) {shape = [16, 8, 16]}
  %v: f32[16, 128] = matmul(%x, %wv)
  %v4: f32[16, 8, 16] = reshape(%v) {shape = [16, 8, 16]}
  %qh: f32[8, 16, 16] = transpose(%q4) {perm = [1, 0, 2]}
  %kt: f32[8, 16, 16] = transpose(%k4) {perm = [1, 2, 0]}
  %vh: f32[8, 16, 16] = transpose(%v4) {perm = [1, 0, 2]}
  %sc: f32[8, 16, 16] = matmul(%qh, %kt)
  %scale: f32[] = constant() {value = dense<f32[], [0.25]>}
  %ss: f32[8, 16, 16] = mul(%sc, %scale)
  %sm: f32[8, 16, 16] = add(%ss, %mask)
  %pr: f32[8, 16, 16] = softmax(%sm)
  %a: f32[8, 16, 16] = matmul(%pr, %vh)
  %at: f32[16, 8, 16] = transpose(%a) {perm = [1, 0, 2]}
  %a2: f32[16, 128] = reshape(%at) {shape = [16, 128]}
  %o: f32[16, 128] = matmul(%a2, %wo)
  output %o
}

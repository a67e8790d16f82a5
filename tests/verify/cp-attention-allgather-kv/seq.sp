# Causal multi-head attention over 32 tokens (hidden 64, 4 heads of 16).
graph cp_attention {
  input %x: f32[32, 64]
  input %mask: f32[32, 32]
  param %wq: f32[64, 64]
  param %wk: f32[64, 64]
  param %wv: f32[64, 64]
  param %wo: f32[64, 64]
  %q: f32[32, 64] = matmul(%x, %wq)
  %q4: f32[32, 4, 16] = reshape(%q) {shape = [32, 4, 16]}
  %k: f32[32, 64] = matmul(%x, %wk)
  %k4: f32[32, 4, 16] = reshape(%k) {shape = [32, 4, 16]}
  %v: f32[32, 64] = matmul(%x, %wv)
  %v4: f32[32, 4, 16] = reshape(%v) {shape = [32, 4, 16]}
  %qh: f32[4, 32, 16] = transpose(%q4) {perm = [1, 0, 2]}
  %kt: f32[4, 16, 32] = transpose(%k4) {perm = [1, 2, 0]}
  %vh: f32[4, 32, 16] = transpose(%v4) {perm = [1, 0, 2]}
  %sc: f32[4, 32, 32] = matmul(%qh, %kt)
  %scale: f32[] = constant() {value = dense<f32[], [0.25]>}
  %ss: f32[4, 32, 32] = mul(%sc, %scale)
  %sm: f32[4, 32, 32] = add(%ss, %mask)
  %pr: f32[4, 32, 32] = softmax(%sm)
  %a: f32[4, 32, 16] = matmul(%pr, %vh)
  %at: f32[32, 4, 16] = transpose(%a) {perm = [1, 0, 2]}
  %a2: f32[32, 64] = reshape(%at) {shape = [32, 64]}
  %o: f32[32, 64] = matmul(%a2, %wo)
  output %o
}

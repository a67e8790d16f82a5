# Context parallel CP=4, causal attention: rank r projects its 8 tokens,
# all-gathers K and V over cp and attends its query rows to every key.
program cp_attention_cp4 {
  world 4
  mesh [cp = 4]
  rank 0..3 {
    input %x: f32[8, 64]
    input %mask: f32[8, 32]
    param %wq: f32[64, 64]
    param %wk: f32[64, 64]
    param %wv: f32[64, 64]
    param %wo: f32[64, 64]
    %q: f32[8, 64] = matmul(%x, %wq)
    %q4: f32[8, 4, 16] = reshape(%q) {shape = [8, 4, 16]}
    %k: f32[8, 64] = matmul(%x, %wk)
    %k4: f32[8, 4, 16] = reshape(%k) {shape = [8, 4, 16]}
    %v: f32[8, 64] = matmul(%x, %wv)
    %v4: f32[8, 4, 16] = reshape(%v) {shape = [8, 4, 16]}
    %kall: f32[32, 4, 16] = all_gather(%k4) {group = "cp", dim = 0}
    %vall: f32[32, 4, 16] = all_gather(%v4) {group = "cp", dim = 0}
    %qh: f32[4, 8, 16] = transpose(%q4) {perm = [1, 0, 2]}
    %kt: f32[4, 16, 32] = transpose(%kall) {perm = [1, 2, 0]}
    %vh: f32[4, 32, 16] = transpose(%vall) {perm = [1, 0, 2]}
    %sc: f32[4, 8, 32] = matmul(%qh, %kt)
    %scale: f32[] = constant() {value = dense<f32[], [0.25]>}
    %ss: f32[4, 8, 32] = mul(%sc, %scale)
    %sm: f32[4, 8, 32] = add(%ss, %mask)
    %pr: f32[4, 8, 32] = softmax(%sm)
    %a: f32[4, 8, 16] = matmul(%pr, %vh)
    %at: f32[8, 4, 16] = transpose(%a) {perm = [1, 0, 2]}
    %a2: f32[8, 64] = reshape(%at) {shape = [8, 64]}
    %o: f32[8, 64] = matmul(%a2, %wo)
    output %o
  }
}

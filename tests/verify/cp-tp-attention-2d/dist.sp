# Context parallel x tensor parallel on a [cp = 2, tp = 2] mesh: rank r holds
# tokens [8 idx(r,cp), +8) and heads [4 idx(r,tp), +4); K and V are
# all-gathered over cp, the output projection summed over tp.
program d {
  world 4
  mesh [cp = 2, tp = 2]
  rank 0..3 {
    input %x: f32[8, 128]
    input %mask: f32[8, 16]
    param %wq: f32[128, 64]
    param %wk: f32[128, 64]
    param %wv: f32[128, 64]
    param %wo: f32[64, 128]
    %q: f32[8, 64] = matmul(%x, %wq)
    %q4: f32[8, 4, 16] = reshape(%q) {shape = [8, 4, 16]}
    %k: f32[8, 64] = matmul(%x, %wk)
    %k4: f32[8, 4, 16] = reshape(%k) {shape = [8, 4, 16]}
    %v: f32[8, 64] = matmul(%x, %wv)
    %v4: f32[8, 4, 16] = reshape(%v) {shape = [8, 4, 16]}
    %kall: f32[16, 4, 16] = all_gather(%k4) {group = "cp", dim = 0}
    %vall: f32[16, 4, 16] = all_gather(%v4) {group = "cp", dim = 0}
    %qh: f32[4, 8, 16] = transpose(%q4) {perm = [1, 0, 2]}
    %kt: f32[4, 16, 16] = transpose(%kall) {perm = [1, 2, 0]}
    %vh: f32[4, 16, 16] = transpose(%vall) {perm = [1, 0, 2]}
    %sc: f32[4, 8, 16] = matmul(%qh, %kt)
    %scale: f32[] = constant() {value = dense<f32[], [0.25]>}
    %ss: f32[4, 8, 16] = mul(%sc, %scale)
    %sm: f32[4, 8, 16] = add(%ss, %mask)
    %pr: f32[4, 8, 16] = softmax(%sm)
    %a: f32[4, 8, 16] = matmul(%pr, %vh)
    %at: f32[8, 4, 16] = transpose(%a) {perm = [1, 0, 2]}
    %a2: f32[8, 64] = reshape(%at) {shape = [8, 64]}
    %op: f32[8, 128] = matmul(%a2, %wo)
    %o: f32[8, 128] = all_reduce(%op) {group = "tp"}
    output %o
  }
}

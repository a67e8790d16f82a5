# DP=2 x CP=2: each rank holds 4 tokens; its loss and gradient are local
# means, averaged over the whole dp+cp group.
program linreg_dp2_cp2 {
  world 4
  mesh [dp = 2, cp = 2]
  rank 0..3 {
    input %x: f32[4, 4]
    input %t: f32[4, 1]
    param %w: f32[4, 1]
    %pred: f32[4, 1] = matmul(%x, %w)
    %e: f32[4, 1] = sub(%pred, %t)
    %e2: f32[4, 1] = mul(%e, %e)
    %lossl: f32[] = reduce_mean(%e2) {keepdims = 0}
    %k: f32[] = constant() {value = dense<f32[], [0.5]>}
    %de: f32[4, 1] = mul(%e, %k)
    %xt: f32[4, 4] = transpose(%x) {perm = [1, 0]}
    %dwl: f32[4, 1] = matmul(%xt, %de)
    %loss: f32[] = all_reduce(%lossl) {group = "dp+cp", reduce = "avg"}
    %dw: f32[4, 1] = all_reduce(%dwl) {group = "dp+cp", reduce = "avg"}
    output %loss, %dw
  }
}

# Data parallel DP=2: local mean loss and gradient, all-reduced with avg.
program linreg_dp2 {
  world 2
  mesh [dp = 2]
  rank 0..1 {
    input %x: f32[8, 4]
    input %t: f32[8, 1]
    param %w: f32[4, 1]
    %pred: f32[8, 1] = matmul(%x, %w)
    %e: f32[8, 1] = sub(%pred, %t)
    %e2: f32[8, 1] = mul(%e, %e)
    %lossl: f32[] = reduce_mean(%e2) {keepdims = 0}
    %k: f32[] = constant() {value = dense<f32[], [0.25]>}
    %de: f32[8, 1] = mul(%e, %k)
    %xt: f32[4, 8] = transpose(%x) {perm = [1, 0]}
    %dwl: f32[4, 1] = matmul(%xt, %de)
    %loss: f32[] = all_reduce(%lossl) {group = "dp", reduce = "avg"}
    %dw: f32[4, 1] = all_reduce(%dwl) {group = "dp", reduce = "avg"}
    output %loss, %dw
  }
}

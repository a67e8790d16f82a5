# Data parallel DP=16: local mean loss and gradient over 4 tokens each,
# all-reduced with avg (the mean over the group halves 4 times in S).
program linreg_dp16 {
  world 16
  mesh [dp = 16]
  rank 0..15 {
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
    %loss: f32[] = all_reduce(%lossl) {group = "dp", reduce = "avg"}
    %dw: f32[4, 1] = all_reduce(%dwl) {group = "dp", reduce = "avg"}
    output %loss, %dw
  }
}

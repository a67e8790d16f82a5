# Linear regression: mean squared error over 64 tokens and its weight gradient.
graph linreg {
  input %x: f32[64, 4]
  input %t: f32[64, 1]
  param %w: f32[4, 1]
  %pred: f32[64, 1] = matmul(%x, %w)
  %e: f32[64, 1] = sub(%pred, %t)
  %e2: f32[64, 1] = mul(%e, %e)
  %loss: f32[] = reduce_mean(%e2) {keepdims = 0}
  %k: f32[] = constant() {value = dense<f32[], [0.03125]>}
  %de: f32[64, 1] = mul(%e, %k)
  %xt: f32[4, 64] = transpose(%x) {perm = [1, 0]}
  %dw: f32[4, 1] = matmul(%xt, %de)
  output %loss, %dw
}

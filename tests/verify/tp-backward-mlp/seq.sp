# MLP forward and backward (dy is the upstream gradient of y):
# weight gradients dw1, dw2 and input gradient dx.
graph mlp_bwd {
  input %x: f32[8, 8]
  input %dy: f32[8, 8]
  param %w1: f32[8, 16]
  param %w2: f32[16, 8]
  %h: f32[8, 16] = matmul(%x, %w1)
  %g: f32[8, 16] = tanh(%h)
  %y: f32[8, 8] = matmul(%g, %w2)
  %w2t: f32[8, 16] = transpose(%w2) {perm = [1, 0]}
  %dg: f32[8, 16] = matmul(%dy, %w2t)
  %g2: f32[8, 16] = mul(%g, %g)
  %one: f32[] = constant() {value = dense<f32[], [1.0]>}
  %dt: f32[8, 16] = sub(%one, %g2)
  %dh: f32[8, 16] = mul(%dg, %dt)
  %gt: f32[16, 8] = transpose(%g) {perm = [1, 0]}
  %dw2: f32[16, 8] = matmul(%gt, %dy)
  %xt: f32[8, 8] = transpose(%x) {perm = [1, 0]}
  %dw1: f32[8, 16] = matmul(%xt, %dh)
  %w1t: f32[16, 8] = transpose(%w1) {perm = [1, 0]}
  %dx: f32[8, 8] = matmul(%dh, %w1t)
  output %y, %dw1, %dw2, %dx
}

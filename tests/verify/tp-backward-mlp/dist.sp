# TP=2 forward and backward: the input gradient of the column-parallel layer
# is all-reduced (the conjugate of the forward identity); weight gradients
# stay sharded like their weights.
program mlp_bwd_tp2 {
  world 2
  mesh [tp = 2]
  rank 0..1 {
    input %x: f32[8, 8]
    input %dy: f32[8, 8]
    param %w1: f32[8, 8]
    param %w2: f32[8, 8]
    %h: f32[8, 8] = matmul(%x, %w1)
    %g: f32[8, 8] = tanh(%h)
    %yp: f32[8, 8] = matmul(%g, %w2)
    %y: f32[8, 8] = all_reduce(%yp) {group = "tp"}
    %w2t: f32[8, 8] = transpose(%w2) {perm = [1, 0]}
    %dg: f32[8, 8] = matmul(%dy, %w2t)
    %g2: f32[8, 8] = mul(%g, %g)
    %one: f32[] = constant() {value = dense<f32[], [1.0]>}
    %dt: f32[8, 8] = sub(%one, %g2)
    %dh: f32[8, 8] = mul(%dg, %dt)
    %gt: f32[8, 8] = transpose(%g) {perm = [1, 0]}
    %dw2: f32[8, 8] = matmul(%gt, %dy)
    %xt: f32[8, 8] = transpose(%x) {perm = [1, 0]}
    %dw1: f32[8, 8] = matmul(%xt, %dh)
    %w1t: f32[8, 8] = transpose(%w1) {perm = [1, 0]}
    %dxp: f32[8, 8] = matmul(%dh, %w1t)
    %dx: f32[8, 8] = all_reduce(%dxp) {group = "tp"}
    output %y, %dw1, %dw2, %dx
  }
}

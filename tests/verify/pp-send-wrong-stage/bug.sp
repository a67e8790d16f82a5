# BUG: the stage-1 peer is computed with the wrong mesh stride: stage-0 rank d
# sends to 3 - d, the stage-1 rank of the other dp replica, so activations
# meet the other replica's targets.
program pp_loss_pp2_dp2 {
  world 4
  mesh [pp = 2, dp = 2]
  rank 0 stage0 {
    input %x: f32[4, 8]
    param %w0: f32[8, 8]
    %h: f32[4, 8] = matmul(%x, %w0)
    send(%h) {peer = 3}
  }
  rank 1 stage0 {
    input %x: f32[4, 8]
    param %w0: f32[8, 8]
    %h: f32[4, 8] = matmul(%x, %w0)
    send(%h) {peer = 2}
  }
  rank 2 stage1 {
    input %t: f32[4, 8]
    param %w1: f32[8, 8]
    %h: f32[4, 8] = recv() {peer = 1, dtype = f32, shape = [4, 8]}
    %a: f32[4, 8] = tanh(%h)
    %o: f32[4, 8] = matmul(%a, %w1)
    %e: f32[4, 8] = sub(%o, %t)
    %e2: f32[4, 8] = mul(%e, %e)
    %lossl: f32[] = reduce_mean(%e2) {keepdims = 0}
    %loss: f32[] = all_reduce(%lossl) {group = "dp"}
    %half: f32[] = constant() {value = dense<f32[], [0.5]>}
    %lossm: f32[] = mul(%loss, %half)
    output %lossm
  }
  rank 3 stage1 {
    input %t: f32[4, 8]
    param %w1: f32[8, 8]
    %h: f32[4, 8] = recv() {peer = 0, dtype = f32, shape = [4, 8]}
    %a: f32[4, 8] = tanh(%h)
    %o: f32[4, 8] = matmul(%a, %w1)
    %e: f32[4, 8] = sub(%o, %t)
    %e2: f32[4, 8] = mul(%e, %e)
    %lossl: f32[] = reduce_mean(%e2) {keepdims = 0}
    %loss: f32[] = all_reduce(%lossl) {group = "dp"}
    %half: f32[] = constant() {value = dense<f32[], [0.5]>}
    %lossm: f32[] = mul(%loss, %half)
    output %lossm
  }
}

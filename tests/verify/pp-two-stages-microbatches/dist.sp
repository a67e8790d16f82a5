# Pipeline PP=2 with 2 micro-batches: stage 0 runs layer 0 on each
# micro-batch and sends it (tags 0, 1); stage 1 runs layer 1.
program two_layer_pp2 {
  world 2
  mesh [pp = 2]
  rank 0 stage0 {
    input %mb0: f32[4, 8]
    input %mb1: f32[4, 8]
    param %w0: f32[8, 8]
    %h0: f32[4, 8] = matmul(%mb0, %w0)
    %a0: f32[4, 8] = tanh(%h0)
    send(%a0) {peer = 1, tag = 0}
    %h1: f32[4, 8] = matmul(%mb1, %w0)
    %a1: f32[4, 8] = tanh(%h1)
    send(%a1) {peer = 1, tag = 1}
  }
  rank 1 stage1 {
    param %w1: f32[8, 8]
    %a0: f32[4, 8] = recv() {peer = 0, tag = 0, dtype = f32, shape = [4, 8]}
    %y0: f32[4, 8] = matmul(%a0, %w1)
    %a1: f32[4, 8] = recv() {peer = 0, tag = 1, dtype = f32, shape = [4, 8]}
    %y1: f32[4, 8] = matmul(%a1, %w1)
    output %y0, %y1
  }
}

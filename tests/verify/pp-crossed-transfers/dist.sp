# Pipeline PP=2: stage 0 sends the hidden state (tag 0) and the residual
# (tag 1) to stage 1.
program block_pp2 {
  world 2
  mesh [pp = 2]
  rank 0 stage0 {
    input %x: f32[4, 8]
    param %w0: f32[8, 8]
    %h: f32[4, 8] = matmul(%x, %w0)
    send(%h) {peer = 1, tag = 0}
    send(%x) {peer = 1, tag = 1}
  }
  rank 1 stage1 {
    param %w1: f32[8, 8]
    %h: f32[4, 8] = recv() {peer = 0, tag = 0, dtype = f32, shape = [4, 8]}
    %res: f32[4, 8] = recv() {peer = 0, tag = 1, dtype = f32, shape = [4, 8]}
    %a: f32[4, 8] = tanh(%h)
    %o: f32[4, 8] = matmul(%a, %w1)
    %y: f32[4, 8] = add(%o, %res)
    output %y
  }
}

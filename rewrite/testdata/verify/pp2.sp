# Two pipeline stages: rank 0 sends its activation, rank 1 receives it.
program pp2 {
  world 2
  mesh [pp = 2]
  rank 0 {
    input %x: f32[4, 16]
    param %w0: f32[16, 16]
    %h: f32[4, 16] = matmul(%x, %w0)
    %r: f32[4, 16] = relu(%h)
    send(%r) {peer = 1, tag = 7}
  }
  rank 1 {
    param %w1: f32[16, 8]
    %r: f32[4, 16] = recv() {peer = 0, tag = 7, dtype = f32, shape = [4, 16]}
    %logits: f32[4, 8] = matmul(%r, %w1)
    output %logits
  }
}

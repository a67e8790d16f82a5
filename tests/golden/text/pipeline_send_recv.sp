# Two pipeline stages: rank 0 sends its activation, rank 1 receives it.
program pipeline {
  world 2
  rank 0 pipeline_stage0 {
    input %x: f32[micro, 1024]
    param %w0: f32[1024, 1024]
    %h: f32[micro, 1024] = matmul(%x, %w0)
    send(%h) {peer = 1, tag = 7}
  }
  rank 1 pipeline_stage1 {
    param %w1: f32[1024, 10]
    %h: f32[micro, 1024] = recv() {peer = 0, tag = 7, dtype = f32, shape = [micro, 1024]}
    %logits: f32[micro, 10] = matmul(%h, %w1)
    output %logits
  }
}

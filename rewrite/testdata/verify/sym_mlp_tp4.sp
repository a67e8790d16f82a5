# TP 4 of sym_mlp_seq.sp: each rank one head; reshapes hold the symbols.
program mlp_tp4 {
  world 4
  mesh [tp = 4]
  rank 0..3 {
    input %x: f32[batch, seq, 16]
    param %w1: f32[16, 8]
    param %w2: f32[8, 16]
    %x2: f32[batch*seq, 16] = reshape(%x) {shape = [batch*seq, 16]}
    %h: f32[batch*seq, 8] = matmul(%x2, %w1)
    %h4: f32[batch*seq, 1, 8] = reshape(%h) {shape = [batch*seq, 1, 8]}
    %g: f32[batch*seq, 1, 8] = gelu(%h4)
    %g2: f32[batch*seq, 8] = reshape(%g) {shape = [batch*seq, 8]}
    %y2: f32[batch*seq, 16] = matmul(%g2, %w2)
    %p: f32[batch, seq, 16] = reshape(%y2) {shape = [batch, seq, 16]}
    %y: f32[batch, seq, 16] = all_reduce(%p) {group = "tp"}
    output %y
  }
}

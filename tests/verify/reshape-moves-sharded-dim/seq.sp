# Per-sequence head: flatten [seq, hidden] of each batch row, then project.
graph flat_head {
  input %x: f32[2, 4, 8]
  param %w1: f32[8, 8]
  param %w2: f32[32, 4]
  %y: f32[2, 4, 8] = matmul(%x, %w1)
  %z: f32[2, 32] = reshape(%y) {shape = [2, 32]}
  %o: f32[2, 4] = matmul(%z, %w2)
  %t: f32[2, 4] = tanh(%o)
  output %t
}

# Hash-routed MoE with 2 experts: in each block of 4 tokens the first 2 go
# to expert 0 and the last 2 to expert 1; expert e is tanh(x @ we[e]); the
# combined output is layer-normed.
graph moe {
  input %x: f32[8, 8]
  param %we: f32[2, 8, 8]
  %x4: f32[2, 2, 2, 8] = reshape(%x) {shape = [2, 2, 2, 8]}
  %xe: f32[2, 2, 2, 8] = transpose(%x4) {perm = [1, 0, 2, 3]}
  %xr: f32[2, 4, 8] = reshape(%xe) {shape = [2, 4, 8]}
  %he: f32[2, 4, 8] = matmul(%xr, %we)
  %ht: f32[2, 4, 8] = tanh(%he)
  %h4: f32[2, 2, 2, 8] = reshape(%ht) {shape = [2, 2, 2, 8]}
  %hb: f32[2, 2, 2, 8] = transpose(%h4) {perm = [1, 0, 2, 3]}
  %y: f32[8, 8] = reshape(%hb) {shape = [8, 8]}
  %out: f32[8, 8] = layer_norm(%y)
  output %out
}

# Hash-routed MoE, E = 2 experts of capacity C = 2, tokens in B = 2 blocks of
# E*C = 4 (one block per expert-parallel rank): token c of expert e in block
# b is row b*4 + e*2 + c. Expert e is tanh(x @ we[e]) on its B*C tokens
# (expert-major [E, B*C, M], one batched matmul over the stacked expert
# weights); the outputs go back to token order ([B, E, C, F] flattened to
# [B, E*C, F], then to [T, F]) and are layer-normed.
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
  %hr: f32[2, 4, 8] = reshape(%hb) {shape = [2, 4, 8]}
  %y: f32[8, 8] = reshape(%hr) {shape = [8, 8]}
  %out: f32[8, 8] = layer_norm(%y)
  output %out
}

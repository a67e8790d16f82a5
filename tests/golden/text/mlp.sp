# A two-layer MLP with a tanh GELU, as captured from a Megatron module.
graph mlp {
  input %x: f32[batch, 768]
  param %w1: f32[768, 3072]
  param %b1: f32[3072]
  param %w2: f32[3072, 768]
  param %b2: f32[768]
  %h: f32[batch, 3072] = matmul(%x, %w1)  @ "megatron/core/tensor_parallel/layers.py":252
  %hb: f32[batch, 3072] = add(%h, %b1)  @ "megatron/core/tensor_parallel/layers.py":254
  %g: f32[batch, 3072] = gelu(%hb) {approximate = "tanh"}
  %o: f32[batch, 768] = matmul(%g, %w2)
  %y: f32[batch, 768] = add(%o, %b2)
  output %y
}

# The failing node has an imported source location: the error points at the
# text and keeps the source in the message.
graph g {
  input %x: f32[batch, 768]
  param %w: f32[768, 3072]
  %h: f16[batch, 3072] = matmul(%x, %w)  @ "megatron/core/tensor_parallel/layers.py":252
  output %h
}

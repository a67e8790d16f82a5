# Two layers on 8 tokens (2 micro-batches of 4): y = tanh(x @ w0) @ w1.
graph two_layer {
  input %x: f32[8, 8]
  param %w0: f32[8, 8]
  param %w1: f32[8, 8]
  %h: f32[8, 8] = matmul(%x, %w0)
  %a: f32[8, 8] = tanh(%h)
  %y: f32[8, 8] = matmul(%a, %w1)
  output %y
}

# Masked token loss normalized by the number of real (unmasked) tokens.
graph masked_loss {
  input %x: f32[16, 4]
  input %mask: bool[16]
  param %w: f32[4, 4]
  %h: f32[16, 4] = matmul(%x, %w)
  %a: f32[16, 4] = tanh(%h)
  %a2: f32[16, 4] = mul(%a, %a)
  %li: f32[16] = reduce_sum(%a2) {axes = [1], keepdims = 0}
  %mf: f32[16] = cast(%mask) {to = f32}
  %lm: f32[16] = mul(%li, %mf)
  %num: f32[] = reduce_sum(%lm) {keepdims = 0}
  %den: f32[] = reduce_sum(%mf) {keepdims = 0}
  %loss: f32[] = div(%num, %den)
  output %loss
}

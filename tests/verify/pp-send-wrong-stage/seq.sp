# Two-layer regression on 8 tokens: loss = mean((tanh(x @ w0) @ w1 - t)^2).
graph pp_loss {
  input %x: f32[8, 8]
  input %t: f32[8, 8]
  param %w0: f32[8, 8]
  param %w1: f32[8, 8]
  %h: f32[8, 8] = matmul(%x, %w0)
  %a: f32[8, 8] = tanh(%h)
  %o: f32[8, 8] = matmul(%a, %w1)
  %e: f32[8, 8] = sub(%o, %t)
  %e2: f32[8, 8] = mul(%e, %e)
  %loss: f32[] = reduce_mean(%e2) {keepdims = 0}
  output %loss
}

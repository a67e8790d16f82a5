# Layer norm with a weight, forward and the weight gradient (dy is the
# upstream gradient): y = norm(x) * gamma, dgamma = sum over tokens of norm(x) * dy.
graph ln_grad {
  input %x: f32[8, 8]
  input %dy: f32[8, 8]
  param %gamma: f32[8]
  %n: f32[8, 8] = layer_norm(%x)
  %y: f32[8, 8] = mul(%n, %gamma)
  %ndy: f32[8, 8] = mul(%n, %dy)
  %dgamma: f32[8] = reduce_sum(%ndy) {axes = [0], keepdims = 0}
  output %y, %dgamma
}

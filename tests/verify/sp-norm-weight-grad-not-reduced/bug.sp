# BUG: the weight gradient stays partial: each rank sums only its own tokens.
program ln_grad_sp2 {
  world 2
  mesh [tp = 2]
  rank 0..1 {
    input %x: f32[4, 8]
    input %dy: f32[4, 8]
    param %gamma: f32[8]
    %n: f32[4, 8] = layer_norm(%x)
    %y: f32[4, 8] = mul(%n, %gamma)
    %ndy: f32[4, 8] = mul(%n, %dy)
    %dgamma: f32[8] = reduce_sum(%ndy) {axes = [0], keepdims = 0}
    output %y, %dgamma
  }
}

# Masked attention probabilities on [batch 2, heads 3, seq 8, seq 8]: a
# causal mask [1, 1, 8, 8] filled with -10000 where it is set, then softmax
# over the keys.
graph masked_softmax {
  input %x: f32[2, 3, 8, 8]
  input %m: bool[1, 1, 8, 8]
  %c: f32[] = constant() {value = dense<f32[], [-10000.0]>}
  %y: f32[2, 3, 8, 8] = where(%m, %c, %x)
  %p: f32[2, 3, 8, 8] = softmax(%y)
  output %p
}

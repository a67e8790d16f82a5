# A squared activation (pow by a scalar) between two linears.
graph pow_mlp {
  input %x: f32[2, 4, 8]
  param %w1: f32[8, 12]
  param %w2: f32[12, 8]
  %h: f32[2, 4, 12] = matmul(%x, %w1)
  %c: f32[] = constant() {value = dense<f32[], [2.0]>}
  %p: f32[2, 4, 12] = pow(%h, %c)
  %z: f32[2, 4, 8] = matmul(%p, %w2)
  output %z
}

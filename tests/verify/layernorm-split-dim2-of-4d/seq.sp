# Per-head layer norm (a QK-norm) on [batch 2, heads 3, seq 8, dim 6].
graph ln_bnsd {
  input %x: f32[2, 3, 8, 6]
  param %g: f32[6]
  param %b: f32[6]
  %y: f32[2, 3, 8, 6] = layer_norm(%x, %g, %b)
  output %y
}

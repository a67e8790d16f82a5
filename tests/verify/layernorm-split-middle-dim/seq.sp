# Batch-first layer norm: [batch 2, seq 8, hidden 6], normalized over hidden.
graph ln_bsh {
  input %x: f32[2, 8, 6]
  param %g: f32[6]
  param %b: f32[6]
  %y: f32[2, 8, 6] = layer_norm(%x, %g, %b)
  output %y
}

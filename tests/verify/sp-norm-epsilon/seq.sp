# Pre-norm MLP block with a residual and a final norm, both with a
# non-default epsilon (Llama-2's RMSNorm uses 1e-6; GPT-NeoX's 1e-5 layer
# norm is the default).
graph norm_eps_mlp {
  input %x: f32[8, 8]
  param %g_in: f32[8]
  param %gamma: f32[8]
  param %beta: f32[8]
  param %w1: f32[8, 16]
  param %w2: f32[16, 8]
  %n: f32[8, 8] = rms_norm(%x, %g_in) {epsilon = 1e-6}
  %h: f32[8, 16] = matmul(%n, %w1)
  %a: f32[8, 16] = silu(%h)
  %o: f32[8, 8] = matmul(%a, %w2)
  %r: f32[8, 8] = add(%x, %o)
  %y: f32[8, 8] = layer_norm(%r, %gamma, %beta) {epsilon = 0.001}
  output %y
}

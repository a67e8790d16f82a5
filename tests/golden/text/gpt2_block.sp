# One GPT-2 transformer block: pre-LN attention with a causal mask and a GELU MLP.
graph gpt2_block {
  input %x: f32[batch, seq, 768]
  input %mask: f32[seq, seq]       # 0 on and below the diagonal, -inf above
  param %ln1_g: f32[768]
  param %ln1_b: f32[768]
  param %w_qkv: f32[768, 2304]
  param %b_qkv: f32[2304]
  param %w_proj: f32[768, 768]
  param %b_proj: f32[768]
  param %ln2_g: f32[768]
  param %ln2_b: f32[768]
  param %w_fc: f32[768, 3072]
  param %b_fc: f32[3072]
  param %w_out: f32[3072, 768]
  param %b_out: f32[768]
  %h1: f32[batch, seq, 768] = layer_norm(%x, %ln1_g, %ln1_b)
  %qkv0: f32[batch, seq, 2304] = matmul(%h1, %w_qkv)
  %qkv: f32[batch, seq, 2304] = add(%qkv0, %b_qkv)
  %q, %k, %v = split(%qkv) {axis = 2, sizes = [768, 768, 768]}
  %q4 = reshape(%q) {shape = [batch, seq, 12, 64]}
  %k4 = reshape(%k) {shape = [batch, seq, 12, 64]}
  %v4 = reshape(%v) {shape = [batch, seq, 12, 64]}
  %qh = transpose(%q4) {perm = [0, 2, 1, 3]}
  %kt = transpose(%k4) {perm = [0, 2, 3, 1]}
  %vh = transpose(%v4) {perm = [0, 2, 1, 3]}
  %scale = constant() {value = dense<f32[], [0.125]>}
  %s0 = matmul(%qh, %kt)
  %s1 = mul(%s0, %scale)
  %s2 = add(%s1, %mask)
  %p = softmax(%s2) {axis = -1}
  %a = matmul(%p, %vh)
  %at = transpose(%a) {perm = [0, 2, 1, 3]}
  %a3 = reshape(%at) {shape = [batch, seq, 768]}
  %pr0 = matmul(%a3, %w_proj)
  %pr = add(%pr0, %b_proj)
  %r1 = add(%x, %pr)
  %h2 = layer_norm(%r1, %ln2_g, %ln2_b) {epsilon = 1e-05}
  %f0 = matmul(%h2, %w_fc)
  %f1 = add(%f0, %b_fc)
  %f2 = gelu(%f1) {approximate = "tanh"}
  %m0 = matmul(%f2, %w_out)
  %m = add(%m0, %b_out)
  %y = add(%r1, %m)
  output %y
}

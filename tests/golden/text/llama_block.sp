# A Llama-style block: RMSNorm, rotary embedding with precomputed sin/cos,
# grouped-query attention (8 query heads sharing 2 KV heads) and a SwiGLU MLP.
graph llama_block {
  input %x: bf16[batch, seq, 512]
  input %cos: bf16[seq, 64]
  input %sin: bf16[seq, 64]
  param %attn_norm: bf16[512]
  param %wq: bf16[512, 512]
  param %wk: bf16[512, 128]
  param %wv: bf16[512, 128]
  param %wo: bf16[512, 512]
  param %mlp_norm: bf16[512]
  param %w_gate: bf16[512, 1408]
  param %w_up: bf16[512, 1408]
  param %w_down: bf16[1408, 512]
  %xn = rms_norm(%x, %attn_norm) {epsilon = 1e-05}
  %q0 = matmul(%xn, %wq)
  %k0 = matmul(%xn, %wk)
  %v0 = matmul(%xn, %wv)
  %q = reshape(%q0) {shape = [batch, seq, 8, 64]}
  %k = reshape(%k0) {shape = [batch, seq, 2, 64]}
  %v = reshape(%v0) {shape = [batch, seq, 2, 64]}
  # rotary embedding: x * cos + rotate_half(x) * sin
  %c = unsqueeze(%cos) {axes = [1]}
  %s = unsqueeze(%sin) {axes = [1]}
  %q_lo = slice(%q) {starts = [0], ends = [32], axes = [3]}
  %q_hi = slice(%q) {starts = [32], ends = [9223372036854775807], axes = [3]}
  %q_hi_neg = neg(%q_hi)
  %q_rot = concat(%q_hi_neg, %q_lo) {axis = 3}
  %q_c = mul(%q, %c)
  %q_s = mul(%q_rot, %s)
  %q_r = add(%q_c, %q_s)
  %k_lo = slice(%k) {starts = [0], ends = [32], axes = [-1]}
  %k_hi = slice(%k) {starts = [32], ends = [64], axes = [-1]}
  %k_hi_neg = neg(%k_hi)
  %k_rot = concat(%k_hi_neg, %k_lo) {axis = -1}
  %k_c = mul(%k, %c)
  %k_s = mul(%k_rot, %s)
  %k_r = add(%k_c, %k_s)
  # grouped-query attention: repeat each KV head for 4 query heads
  %k_u = unsqueeze(%k_r) {axes = [3]}
  %k_e = expand(%k_u) {shape = [batch, seq, 2, 4, 64]}
  %k_g = reshape(%k_e) {shape = [batch, seq, 8, 64]}
  %v_u = unsqueeze(%v) {axes = [3]}
  %v_e = expand(%v_u) {shape = [batch, seq, 2, 4, 64]}
  %v_g = reshape(%v_e) {shape = [batch, seq, 8, 64]}
  %qh = transpose(%q_r) {perm = [0, 2, 1, 3]}
  %kt = transpose(%k_g) {perm = [0, 2, 3, 1]}
  %vh = transpose(%v_g) {perm = [0, 2, 1, 3]}
  %scale = constant() {value = dense<bf16[], [0.125]>}
  %sc0 = matmul(%qh, %kt)
  %sc = mul(%sc0, %scale)
  %p = softmax(%sc)
  %a = matmul(%p, %vh)
  %at = transpose(%a) {perm = [0, 2, 1, 3]}
  %a3 = reshape(%at) {shape = [batch, seq, 512]}
  %o = matmul(%a3, %wo)
  %h = add(%x, %o)
  %hn = rms_norm(%h, %mlp_norm) {epsilon = 1e-05}
  %gate = matmul(%hn, %w_gate)
  %up = matmul(%hn, %w_up)
  %act = silu(%gate)
  %gu = mul(%act, %up)
  %down = matmul(%gu, %w_down)
  %y = add(%h, %down)
  output %y
}

# Rotary embedding of q (seq 8, head dim 4) with positions 0..7 computed in
# the graph: out = q * cos + rotate_half(q) * sin.
graph rope {
  input %q: f32[8, 4]
  %pos: f32[8] = range() {start = 0, limit = 8, dtype = f32}
  %pos2: f32[8, 1] = unsqueeze(%pos) {axes = [1]}
  %invf: f32[1, 2] = constant() {value = dense<f32[1, 2], [1.0, 0.25]>}
  %ang: f32[8, 2] = mul(%pos2, %invf)
  %c: f32[8, 2] = cos(%ang)
  %s: f32[8, 2] = sin(%ang)
  %q_lo: f32[8, 2] = slice(%q) {starts = [0], ends = [2], axes = [1]}
  %q_hi: f32[8, 2] = slice(%q) {starts = [2], ends = [4], axes = [1]}
  %a: f32[8, 2] = mul(%q_lo, %c)
  %b: f32[8, 2] = mul(%q_hi, %s)
  %r_lo: f32[8, 2] = sub(%a, %b)
  %d: f32[8, 2] = mul(%q_hi, %c)
  %e: f32[8, 2] = mul(%q_lo, %s)
  %r_hi: f32[8, 2] = add(%d, %e)
  %out: f32[8, 4] = concat(%r_lo, %r_hi) {axis = 1}
  output %out
}

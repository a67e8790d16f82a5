# Context parallel CP=2: rank r holds tokens [4r, 4r+4) and starts its
# positions at 4r.
program rope_cp2 {
  world 2
  mesh [cp = 2]
  rank 0 {
    input %q: f32[4, 4]
    %pos: f32[4] = range() {start = 0, limit = 4, dtype = f32}
    %pos2: f32[4, 1] = unsqueeze(%pos) {axes = [1]}
    %invf: f32[1, 2] = constant() {value = dense<f32[1, 2], [1.0, 0.25]>}
    %ang: f32[4, 2] = mul(%pos2, %invf)
    %c: f32[4, 2] = cos(%ang)
    %s: f32[4, 2] = sin(%ang)
    %q_lo: f32[4, 2] = slice(%q) {starts = [0], ends = [2], axes = [1]}
    %q_hi: f32[4, 2] = slice(%q) {starts = [2], ends = [4], axes = [1]}
    %a: f32[4, 2] = mul(%q_lo, %c)
    %b: f32[4, 2] = mul(%q_hi, %s)
    %r_lo: f32[4, 2] = sub(%a, %b)
    %d: f32[4, 2] = mul(%q_hi, %c)
    %e: f32[4, 2] = mul(%q_lo, %s)
    %r_hi: f32[4, 2] = add(%d, %e)
    %out: f32[4, 4] = concat(%r_lo, %r_hi) {axis = 1}
    output %out
  }
  rank 1 {
    input %q: f32[4, 4]
    %pos: f32[4] = range() {start = 4, limit = 8, dtype = f32}
    %pos2: f32[4, 1] = unsqueeze(%pos) {axes = [1]}
    %invf: f32[1, 2] = constant() {value = dense<f32[1, 2], [1.0, 0.25]>}
    %ang: f32[4, 2] = mul(%pos2, %invf)
    %c: f32[4, 2] = cos(%ang)
    %s: f32[4, 2] = sin(%ang)
    %q_lo: f32[4, 2] = slice(%q) {starts = [0], ends = [2], axes = [1]}
    %q_hi: f32[4, 2] = slice(%q) {starts = [2], ends = [4], axes = [1]}
    %a: f32[4, 2] = mul(%q_lo, %c)
    %b: f32[4, 2] = mul(%q_hi, %s)
    %r_lo: f32[4, 2] = sub(%a, %b)
    %d: f32[4, 2] = mul(%q_hi, %c)
    %e: f32[4, 2] = mul(%q_lo, %s)
    %r_hi: f32[4, 2] = add(%d, %e)
    %out: f32[4, 4] = concat(%r_lo, %r_hi) {axis = 1}
    output %out
  }
}

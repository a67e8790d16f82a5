# Elementwise ops on a rank-3 activation (no lemma per op and dim: the
# unary-over-concat schema covers them).
graph unary3 {
  input %x: f32[2, 8, 4]
  %t: f32[2, 8, 4] = silu(%x)  @ "act.py":3
  %y: f32[2, 8, 4] = sin(%t)  @ "act.py":4
  output %y
}

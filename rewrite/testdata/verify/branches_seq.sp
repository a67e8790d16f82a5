# Two row-parallel products summed, then read twice: by a bias add and by
# a nonlinearity (as a SwiGLU's input gradient is, dx = dg Wg^T + du Wu^T,
# read by both terms of the norm's backward).
graph branches {
  input %a: f32[8, 32]
  input %b: f32[8, 32]
  param %w1: f32[32, 12]
  param %w2: f32[32, 12]
  param %c: f32[12]
  %p1: f32[8, 12] = matmul(%a, %w1)  @ "branches.py":3
  %p2: f32[8, 12] = matmul(%b, %w2)  @ "branches.py":4
  %s: f32[8, 12] = add(%p1, %p2)  @ "branches.py":5
  %t: f32[8, 12] = neg(%s)  @ "branches.py":6
  %u: f32[8, 12] = add(%t, %c)  @ "branches.py":7
  %v: f32[8, 12] = gelu(%s)  @ "branches.py":8
  output %u
  output %v
}

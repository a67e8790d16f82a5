# S: the floor of x, transposed.
graph seq {
  input %x: f32[4, 6]
  %f: f32[4, 6] = floor(%x)
  %y: f32[6, 4] = transpose(%f) {perm = [1, 0]}
  output %y
}

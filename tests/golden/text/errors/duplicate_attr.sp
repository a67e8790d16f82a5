graph g {
  input %x: f32[4, 8]
  %y = softmax(%x) {axis = 0, axis = 1}
  output %y
}

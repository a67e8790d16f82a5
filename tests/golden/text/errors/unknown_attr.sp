graph g {
  input %x: f32[4, 8]
  %y = softmax(%x) {axes = 1}
  output %y
}

graph g {
  input %x: f32[4, 8]
  %y = softmax(%x) {axis = "last"}
  output %y
}

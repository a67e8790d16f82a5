graph g {
  input %x: f32[4, 8]
  %y = relu(%x) {alpha = 0.1}
  output %y
}

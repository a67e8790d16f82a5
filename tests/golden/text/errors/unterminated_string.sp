graph g {
  input %x: f32[4, 8]
  %y = gelu(%x) {approximate = "tanh}
  output %y
}

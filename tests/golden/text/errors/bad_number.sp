graph g {
  input %x: f32[4, 8x]
  output %x
}

graph g {
  input %x: f32[batch, -4]
  output %x
}

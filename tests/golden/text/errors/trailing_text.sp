graph g {
  input %x: f32[4]
  output %x
}
graph h {
}

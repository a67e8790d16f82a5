graph g {
  input %x: f32[1048576, 1048576, 1024]
  output %x
}

graph g {
  input %x: f32[4]
  %y = add(%x)
  output %y
}

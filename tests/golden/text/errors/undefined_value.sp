graph g {
  input %x: f32[4, 8]
  %y = add(%x, %bias)
  output %y
}

graph g {
  input %x: f32[4, 8]
  %y = neg(%x)
  output %y

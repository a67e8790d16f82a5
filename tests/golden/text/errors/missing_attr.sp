graph g {
  input %x: f32[4, 8]
  %y = transpose(%x)
  output %y
}

graph g {
  input %x: f32[4, 8]
  %y = neg(%x)
  %y = exp(%x)
  output %y
}

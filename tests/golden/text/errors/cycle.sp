graph g {
  input %x: f32[4]
  %a = add(%x, %b)
  %b = neg(%a)
  output %b
}

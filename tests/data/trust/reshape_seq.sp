graph seq {
  input %x: f32[4]
  %y: f32[4] = neg(%x)
  output %y
}

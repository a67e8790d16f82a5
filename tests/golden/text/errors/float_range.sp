graph g {
  input %x: f32[4]
  %y = clip(%x) {max = 1e400}
  output %y
}

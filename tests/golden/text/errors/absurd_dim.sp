graph g {
  input %x: f32[4611686018427387904]
  output %x
}

graph g {
  inptu %x: f32[4, 8]
}

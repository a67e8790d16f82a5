graph g {
  input %x: fp32[4, 8]
  output %x
}

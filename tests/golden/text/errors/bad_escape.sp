graph g {
  input %"a\qb": f32[4]
  output %"a\qb"
}

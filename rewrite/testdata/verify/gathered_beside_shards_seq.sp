# S: exp of x, used whole by a matmul and elementwise with b.
graph gathered_beside_shards {
  input %a: f32[8, 1, 6]
  input %b: f32[8, 1, 6]
  param %w: f32[6, 6]
  %c: f32[8, 1, 6] = exp(%a)
  %m: f32[8, 1, 6] = matmul(%c, %w)
  %y: f32[8, 1, 6] = add(%c, %b)
  output %y
  output %m
}

# SwiGLU MLP with an output bias and a residual, on [batch 2, seq 4, hidden 8].
graph swiglu {
  input %x: f32[2, 4, 8]
  param %wg: f32[8, 16]
  param %wu: f32[8, 16]
  param %wd: f32[16, 8]
  param %bd: f32[8]
  %gate: f32[2, 4, 16] = matmul(%x, %wg)
  %up: f32[2, 4, 16] = matmul(%x, %wu)
  %act: f32[2, 4, 16] = silu(%gate)
  %gu: f32[2, 4, 16] = mul(%act, %up)
  %down: f32[2, 4, 8] = matmul(%gu, %wd)
  %db: f32[2, 4, 8] = add(%down, %bd)
  %y: f32[2, 4, 8] = add(%x, %db)
  output %y
}

# Megatron TP=2 SwiGLU: gate and up column-parallel, down row-parallel,
# bias added once after the all_reduce.
program swiglu_tp2 {
  world 2
  mesh [tp = 2]
  rank 0..1 {
    input %x: f32[2, 4, 8]
    param %wg: f32[8, 8]
    param %wu: f32[8, 8]
    param %wd: f32[8, 8]
    param %bd: f32[8]
    %gate: f32[2, 4, 8] = matmul(%x, %wg)
    %up: f32[2, 4, 8] = matmul(%x, %wu)
    %act: f32[2, 4, 8] = silu(%gate)
    %gu: f32[2, 4, 8] = mul(%act, %up)
    %p: f32[2, 4, 8] = matmul(%gu, %wd)
    %down: f32[2, 4, 8] = all_reduce(%p) {group = "tp"}
    %db: f32[2, 4, 8] = add(%down, %bd)
    %y: f32[2, 4, 8] = add(%x, %db)
    output %y
  }
}

# tanh in S, sigmoid in D: refuted at c. The closest D tensors are ordered
# by D ops downstream of the input relation's tensors (bb, then cc), not by
# name (the upstream aa comes after them), one entry per tensor name.
program d {
  world 2
  mesh [tp = 2]
  rank 0..1 {
    input %x: f32[2, 4, 8]
    param %w: f32[8, 6]
    %aa: f32[2, 4, 6] = matmul(%x, %w)
    %bb: f32[2, 4, 6] = exp(%aa)
    %cc: f32[2, 4, 6] = sigmoid(%bb)
    %out: f32[2, 4, 12] = all_gather(%cc) {group = "tp", dim = 2}
    output %out
  }
}

# DeepSpeed Ulysses, SP 4: each rank holds 2 positions; an all_to_all
# trades the sequence split for a head split (2 heads per rank), attention
# runs over all positions, and the inverse all_to_all trades back.
program ulysses {
  world 4
  mesh [sp = 4]
  rank 0..3 {
    input %x: f32[2, 32]
    param %wq: f32[32, 32]
    param %wk: f32[32, 32]
    param %wv: f32[32, 32]
    param %wo: f32[32, 32]
    %q: f32[2, 32] = matmul(%x, %wq)
    %k: f32[2, 32] = matmul(%x, %wk)
    %v: f32[2, 32] = matmul(%x, %wv)
    %q3: f32[2, 8, 4] = reshape(%q) {shape = [2, 8, 4]}
    %k3: f32[2, 8, 4] = reshape(%k) {shape = [2, 8, 4]}
    %v3: f32[2, 8, 4] = reshape(%v) {shape = [2, 8, 4]}
    %qa: f32[8, 2, 4] = all_to_all(%q3) {group = "sp", split_dim = 1, concat_dim = 0}
    %ka: f32[8, 2, 4] = all_to_all(%k3) {group = "sp", split_dim = 1, concat_dim = 0}
    %va: f32[8, 2, 4] = all_to_all(%v3) {group = "sp", split_dim = 1, concat_dim = 0}
    %qh: f32[2, 8, 4] = transpose(%qa) {perm = [1, 0, 2]}
    %kh: f32[2, 4, 8] = transpose(%ka) {perm = [1, 2, 0]}
    %vh: f32[2, 8, 4] = transpose(%va) {perm = [1, 0, 2]}
    %s: f32[2, 8, 8] = matmul(%qh, %kh)
    %p: f32[2, 8, 8] = softmax(%s)
    %a: f32[2, 8, 4] = matmul(%p, %vh)
    %at: f32[8, 2, 4] = transpose(%a) {perm = [1, 0, 2]}
    %ab: f32[2, 8, 4] = all_to_all(%at) {group = "sp", split_dim = 0, concat_dim = 1}
    %a2: f32[2, 32] = reshape(%ab) {shape = [2, 32]}
    %o: f32[2, 32] = matmul(%a2, %wo)
    output %o
  }
}

# BUG: the fused QKV weight is split as one block: rank 0 gets [q | half of k],
# rank 1 gets [half of k | v], so its q, k, v columns are not one head's.
program attn_tp2 {
  world 2
  mesh [tp = 2]
  rank 0 {
    input %x: f32[2, 4, 8]
    param %wqkv: f32[8, 24]
    param %wo: f32[4, 8]
    %wl: f32[8, 12] = slice(%wqkv) {starts = [0], ends = [12], axes = [1]}
    %qkv: f32[2, 4, 12] = matmul(%x, %wl)
    %q: f32[2, 4, 4], %k: f32[2, 4, 4], %v: f32[2, 4, 4] = split(%qkv) {axis = 2, sizes = [4, 4, 4]}
    %q4: f32[2, 4, 1, 4] = reshape(%q) {shape = [2, 4, 1, 4]}
    %k4: f32[2, 4, 1, 4] = reshape(%k) {shape = [2, 4, 1, 4]}
    %v4: f32[2, 4, 1, 4] = reshape(%v) {shape = [2, 4, 1, 4]}
    %qh: f32[2, 1, 4, 4] = transpose(%q4) {perm = [0, 2, 1, 3]}
    %kt: f32[2, 1, 4, 4] = transpose(%k4) {perm = [0, 2, 3, 1]}
    %vh: f32[2, 1, 4, 4] = transpose(%v4) {perm = [0, 2, 1, 3]}
    %scores: f32[2, 1, 4, 4] = matmul(%qh, %kt)
    %scale: f32[] = constant() {value = dense<f32[], [0.5]>}
    %ss: f32[2, 1, 4, 4] = mul(%scores, %scale)
    %p: f32[2, 1, 4, 4] = softmax(%ss)
    %a: f32[2, 1, 4, 4] = matmul(%p, %vh)
    %at: f32[2, 4, 1, 4] = transpose(%a) {perm = [0, 2, 1, 3]}
    %a3: f32[2, 4, 4] = reshape(%at) {shape = [2, 4, 4]}
    %op: f32[2, 4, 8] = matmul(%a3, %wo)
    %o: f32[2, 4, 8] = all_reduce(%op) {group = "tp"}
    output %o
  }
  rank 1 {
    input %x: f32[2, 4, 8]
    param %wqkv: f32[8, 24]
    param %wo: f32[4, 8]
    %wl: f32[8, 12] = slice(%wqkv) {starts = [12], ends = [24], axes = [1]}
    %qkv: f32[2, 4, 12] = matmul(%x, %wl)
    %q: f32[2, 4, 4], %k: f32[2, 4, 4], %v: f32[2, 4, 4] = split(%qkv) {axis = 2, sizes = [4, 4, 4]}
    %q4: f32[2, 4, 1, 4] = reshape(%q) {shape = [2, 4, 1, 4]}
    %k4: f32[2, 4, 1, 4] = reshape(%k) {shape = [2, 4, 1, 4]}
    %v4: f32[2, 4, 1, 4] = reshape(%v) {shape = [2, 4, 1, 4]}
    %qh: f32[2, 1, 4, 4] = transpose(%q4) {perm = [0, 2, 1, 3]}
    %kt: f32[2, 1, 4, 4] = transpose(%k4) {perm = [0, 2, 3, 1]}
    %vh: f32[2, 1, 4, 4] = transpose(%v4) {perm = [0, 2, 1, 3]}
    %scores: f32[2, 1, 4, 4] = matmul(%qh, %kt)
    %scale: f32[] = constant() {value = dense<f32[], [0.5]>}
    %ss: f32[2, 1, 4, 4] = mul(%scores, %scale)
    %p: f32[2, 1, 4, 4] = softmax(%ss)
    %a: f32[2, 1, 4, 4] = matmul(%p, %vh)
    %at: f32[2, 4, 1, 4] = transpose(%a) {perm = [0, 2, 1, 3]}
    %a3: f32[2, 4, 4] = reshape(%at) {shape = [2, 4, 4]}
    %op: f32[2, 4, 8] = matmul(%a3, %wo)
    %o: f32[2, 4, 8] = all_reduce(%op) {group = "tp"}
    output %o
  }
}

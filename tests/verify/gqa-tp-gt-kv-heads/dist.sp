# GQA, TP=4 > 2 KV heads: the KV weights are replicated and rank r picks
# KV head r / (tp / kv_heads) = r / 2, the one its query head r uses.
program gqa_tp4 {
  world 4
  mesh [tp = 4]
  rank 0 {
    input %x: f32[2, 4, 16]
    param %wq: f32[16, 4]
    param %wk: f32[16, 8]
    param %wv: f32[16, 8]
    param %wo: f32[4, 16]
    %wkl: f32[16, 4] = slice(%wk) {starts = [0], ends = [4], axes = [1]}
    %wvl: f32[16, 4] = slice(%wv) {starts = [0], ends = [4], axes = [1]}
    %q: f32[2, 4, 4] = matmul(%x, %wq)
    %k: f32[2, 4, 4] = matmul(%x, %wkl)
    %v: f32[2, 4, 4] = matmul(%x, %wvl)
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
    %op: f32[2, 4, 16] = matmul(%a3, %wo)
    %o: f32[2, 4, 16] = all_reduce(%op) {group = "tp"}
    output %o
  }
  rank 1 {
    input %x: f32[2, 4, 16]
    param %wq: f32[16, 4]
    param %wk: f32[16, 8]
    param %wv: f32[16, 8]
    param %wo: f32[4, 16]
    %wkl: f32[16, 4] = slice(%wk) {starts = [0], ends = [4], axes = [1]}
    %wvl: f32[16, 4] = slice(%wv) {starts = [0], ends = [4], axes = [1]}
    %q: f32[2, 4, 4] = matmul(%x, %wq)
    %k: f32[2, 4, 4] = matmul(%x, %wkl)
    %v: f32[2, 4, 4] = matmul(%x, %wvl)
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
    %op: f32[2, 4, 16] = matmul(%a3, %wo)
    %o: f32[2, 4, 16] = all_reduce(%op) {group = "tp"}
    output %o
  }
  rank 2 {
    input %x: f32[2, 4, 16]
    param %wq: f32[16, 4]
    param %wk: f32[16, 8]
    param %wv: f32[16, 8]
    param %wo: f32[4, 16]
    %wkl: f32[16, 4] = slice(%wk) {starts = [4], ends = [8], axes = [1]}
    %wvl: f32[16, 4] = slice(%wv) {starts = [4], ends = [8], axes = [1]}
    %q: f32[2, 4, 4] = matmul(%x, %wq)
    %k: f32[2, 4, 4] = matmul(%x, %wkl)
    %v: f32[2, 4, 4] = matmul(%x, %wvl)
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
    %op: f32[2, 4, 16] = matmul(%a3, %wo)
    %o: f32[2, 4, 16] = all_reduce(%op) {group = "tp"}
    output %o
  }
  rank 3 {
    input %x: f32[2, 4, 16]
    param %wq: f32[16, 4]
    param %wk: f32[16, 8]
    param %wv: f32[16, 8]
    param %wo: f32[4, 16]
    %wkl: f32[16, 4] = slice(%wk) {starts = [4], ends = [8], axes = [1]}
    %wvl: f32[16, 4] = slice(%wv) {starts = [4], ends = [8], axes = [1]}
    %q: f32[2, 4, 4] = matmul(%x, %wq)
    %k: f32[2, 4, 4] = matmul(%x, %wkl)
    %v: f32[2, 4, 4] = matmul(%x, %wvl)
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
    %op: f32[2, 4, 16] = matmul(%a3, %wo)
    %o: f32[2, 4, 16] = all_reduce(%op) {group = "tp"}
    output %o
  }
}

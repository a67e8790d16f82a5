# GQA, TP=4 with 2 KV heads: ranks 2j and 2j+1 share KV head j, each
# expanding it to its 2 query heads (the copies of a KV head split across ranks).
program gqa_tp4 {
  world 4
  mesh [tp = 4]
  rank 0 {
    input %x: f32[2, 4, 32]
    param %wq: f32[32, 8]
    param %wk: f32[32, 8]
    param %wv: f32[32, 8]
    param %wo: f32[8, 32]
    %wkl: f32[32, 4] = slice(%wk) {starts = [0], ends = [4], axes = [1]}
    %wvl: f32[32, 4] = slice(%wv) {starts = [0], ends = [4], axes = [1]}
    %q: f32[2, 4, 8] = matmul(%x, %wq)
    %k: f32[2, 4, 4] = matmul(%x, %wkl)
    %v: f32[2, 4, 4] = matmul(%x, %wvl)
    %q4: f32[2, 4, 2, 4] = reshape(%q) {shape = [2, 4, 2, 4]}
    %k4: f32[2, 4, 1, 4] = reshape(%k) {shape = [2, 4, 1, 4]}
    %v4: f32[2, 4, 1, 4] = reshape(%v) {shape = [2, 4, 1, 4]}
    %k5: f32[2, 4, 1, 1, 4] = unsqueeze(%k4) {axes = [3]}
    %v5: f32[2, 4, 1, 1, 4] = unsqueeze(%v4) {axes = [3]}
    %ke: f32[2, 4, 1, 2, 4] = expand(%k5) {shape = [2, 4, 1, 2, 4]}
    %ve: f32[2, 4, 1, 2, 4] = expand(%v5) {shape = [2, 4, 1, 2, 4]}
    %kg: f32[2, 4, 2, 4] = reshape(%ke) {shape = [2, 4, 2, 4]}
    %vg: f32[2, 4, 2, 4] = reshape(%ve) {shape = [2, 4, 2, 4]}
    %qh: f32[2, 2, 4, 4] = transpose(%q4) {perm = [0, 2, 1, 3]}
    %kt: f32[2, 2, 4, 4] = transpose(%kg) {perm = [0, 2, 3, 1]}
    %vh: f32[2, 2, 4, 4] = transpose(%vg) {perm = [0, 2, 1, 3]}
    %scores: f32[2, 2, 4, 4] = matmul(%qh, %kt)
    %scale: f32[] = constant() {value = dense<f32[], [0.5]>}
    %ss: f32[2, 2, 4, 4] = mul(%scores, %scale)
    %p: f32[2, 2, 4, 4] = softmax(%ss)
    %a: f32[2, 2, 4, 4] = matmul(%p, %vh)
    %at: f32[2, 4, 2, 4] = transpose(%a) {perm = [0, 2, 1, 3]}
    %a3: f32[2, 4, 8] = reshape(%at) {shape = [2, 4, 8]}
    %op: f32[2, 4, 32] = matmul(%a3, %wo)
    %o: f32[2, 4, 32] = all_reduce(%op) {group = "tp"}
    output %o
  }
  rank 1 {
    input %x: f32[2, 4, 32]
    param %wq: f32[32, 8]
    param %wk: f32[32, 8]
    param %wv: f32[32, 8]
    param %wo: f32[8, 32]
    %wkl: f32[32, 4] = slice(%wk) {starts = [0], ends = [4], axes = [1]}
    %wvl: f32[32, 4] = slice(%wv) {starts = [0], ends = [4], axes = [1]}
    %q: f32[2, 4, 8] = matmul(%x, %wq)
    %k: f32[2, 4, 4] = matmul(%x, %wkl)
    %v: f32[2, 4, 4] = matmul(%x, %wvl)
    %q4: f32[2, 4, 2, 4] = reshape(%q) {shape = [2, 4, 2, 4]}
    %k4: f32[2, 4, 1, 4] = reshape(%k) {shape = [2, 4, 1, 4]}
    %v4: f32[2, 4, 1, 4] = reshape(%v) {shape = [2, 4, 1, 4]}
    %k5: f32[2, 4, 1, 1, 4] = unsqueeze(%k4) {axes = [3]}
    %v5: f32[2, 4, 1, 1, 4] = unsqueeze(%v4) {axes = [3]}
    %ke: f32[2, 4, 1, 2, 4] = expand(%k5) {shape = [2, 4, 1, 2, 4]}
    %ve: f32[2, 4, 1, 2, 4] = expand(%v5) {shape = [2, 4, 1, 2, 4]}
    %kg: f32[2, 4, 2, 4] = reshape(%ke) {shape = [2, 4, 2, 4]}
    %vg: f32[2, 4, 2, 4] = reshape(%ve) {shape = [2, 4, 2, 4]}
    %qh: f32[2, 2, 4, 4] = transpose(%q4) {perm = [0, 2, 1, 3]}
    %kt: f32[2, 2, 4, 4] = transpose(%kg) {perm = [0, 2, 3, 1]}
    %vh: f32[2, 2, 4, 4] = transpose(%vg) {perm = [0, 2, 1, 3]}
    %scores: f32[2, 2, 4, 4] = matmul(%qh, %kt)
    %scale: f32[] = constant() {value = dense<f32[], [0.5]>}
    %ss: f32[2, 2, 4, 4] = mul(%scores, %scale)
    %p: f32[2, 2, 4, 4] = softmax(%ss)
    %a: f32[2, 2, 4, 4] = matmul(%p, %vh)
    %at: f32[2, 4, 2, 4] = transpose(%a) {perm = [0, 2, 1, 3]}
    %a3: f32[2, 4, 8] = reshape(%at) {shape = [2, 4, 8]}
    %op: f32[2, 4, 32] = matmul(%a3, %wo)
    %o: f32[2, 4, 32] = all_reduce(%op) {group = "tp"}
    output %o
  }
  rank 2 {
    input %x: f32[2, 4, 32]
    param %wq: f32[32, 8]
    param %wk: f32[32, 8]
    param %wv: f32[32, 8]
    param %wo: f32[8, 32]
    %wkl: f32[32, 4] = slice(%wk) {starts = [4], ends = [8], axes = [1]}
    %wvl: f32[32, 4] = slice(%wv) {starts = [4], ends = [8], axes = [1]}
    %q: f32[2, 4, 8] = matmul(%x, %wq)
    %k: f32[2, 4, 4] = matmul(%x, %wkl)
    %v: f32[2, 4, 4] = matmul(%x, %wvl)
    %q4: f32[2, 4, 2, 4] = reshape(%q) {shape = [2, 4, 2, 4]}
    %k4: f32[2, 4, 1, 4] = reshape(%k) {shape = [2, 4, 1, 4]}
    %v4: f32[2, 4, 1, 4] = reshape(%v) {shape = [2, 4, 1, 4]}
    %k5: f32[2, 4, 1, 1, 4] = unsqueeze(%k4) {axes = [3]}
    %v5: f32[2, 4, 1, 1, 4] = unsqueeze(%v4) {axes = [3]}
    %ke: f32[2, 4, 1, 2, 4] = expand(%k5) {shape = [2, 4, 1, 2, 4]}
    %ve: f32[2, 4, 1, 2, 4] = expand(%v5) {shape = [2, 4, 1, 2, 4]}
    %kg: f32[2, 4, 2, 4] = reshape(%ke) {shape = [2, 4, 2, 4]}
    %vg: f32[2, 4, 2, 4] = reshape(%ve) {shape = [2, 4, 2, 4]}
    %qh: f32[2, 2, 4, 4] = transpose(%q4) {perm = [0, 2, 1, 3]}
    %kt: f32[2, 2, 4, 4] = transpose(%kg) {perm = [0, 2, 3, 1]}
    %vh: f32[2, 2, 4, 4] = transpose(%vg) {perm = [0, 2, 1, 3]}
    %scores: f32[2, 2, 4, 4] = matmul(%qh, %kt)
    %scale: f32[] = constant() {value = dense<f32[], [0.5]>}
    %ss: f32[2, 2, 4, 4] = mul(%scores, %scale)
    %p: f32[2, 2, 4, 4] = softmax(%ss)
    %a: f32[2, 2, 4, 4] = matmul(%p, %vh)
    %at: f32[2, 4, 2, 4] = transpose(%a) {perm = [0, 2, 1, 3]}
    %a3: f32[2, 4, 8] = reshape(%at) {shape = [2, 4, 8]}
    %op: f32[2, 4, 32] = matmul(%a3, %wo)
    %o: f32[2, 4, 32] = all_reduce(%op) {group = "tp"}
    output %o
  }
  rank 3 {
    input %x: f32[2, 4, 32]
    param %wq: f32[32, 8]
    param %wk: f32[32, 8]
    param %wv: f32[32, 8]
    param %wo: f32[8, 32]
    %wkl: f32[32, 4] = slice(%wk) {starts = [4], ends = [8], axes = [1]}
    %wvl: f32[32, 4] = slice(%wv) {starts = [4], ends = [8], axes = [1]}
    %q: f32[2, 4, 8] = matmul(%x, %wq)
    %k: f32[2, 4, 4] = matmul(%x, %wkl)
    %v: f32[2, 4, 4] = matmul(%x, %wvl)
    %q4: f32[2, 4, 2, 4] = reshape(%q) {shape = [2, 4, 2, 4]}
    %k4: f32[2, 4, 1, 4] = reshape(%k) {shape = [2, 4, 1, 4]}
    %v4: f32[2, 4, 1, 4] = reshape(%v) {shape = [2, 4, 1, 4]}
    %k5: f32[2, 4, 1, 1, 4] = unsqueeze(%k4) {axes = [3]}
    %v5: f32[2, 4, 1, 1, 4] = unsqueeze(%v4) {axes = [3]}
    %ke: f32[2, 4, 1, 2, 4] = expand(%k5) {shape = [2, 4, 1, 2, 4]}
    %ve: f32[2, 4, 1, 2, 4] = expand(%v5) {shape = [2, 4, 1, 2, 4]}
    %kg: f32[2, 4, 2, 4] = reshape(%ke) {shape = [2, 4, 2, 4]}
    %vg: f32[2, 4, 2, 4] = reshape(%ve) {shape = [2, 4, 2, 4]}
    %qh: f32[2, 2, 4, 4] = transpose(%q4) {perm = [0, 2, 1, 3]}
    %kt: f32[2, 2, 4, 4] = transpose(%kg) {perm = [0, 2, 3, 1]}
    %vh: f32[2, 2, 4, 4] = transpose(%vg) {perm = [0, 2, 1, 3]}
    %scores: f32[2, 2, 4, 4] = matmul(%qh, %kt)
    %scale: f32[] = constant() {value = dense<f32[], [0.5]>}
    %ss: f32[2, 2, 4, 4] = mul(%scores, %scale)
    %p: f32[2, 2, 4, 4] = softmax(%ss)
    %a: f32[2, 2, 4, 4] = matmul(%p, %vh)
    %at: f32[2, 4, 2, 4] = transpose(%a) {perm = [0, 2, 1, 3]}
    %a3: f32[2, 4, 8] = reshape(%at) {shape = [2, 4, 8]}
    %op: f32[2, 4, 32] = matmul(%a3, %wo)
    %o: f32[2, 4, 32] = all_reduce(%op) {group = "tp"}
    output %o
  }
}

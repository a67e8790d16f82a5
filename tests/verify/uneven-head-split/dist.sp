# Megatron TP=2 attention + MLP with 3 heads and ffn 5, split unevenly:
# rank 0 holds heads 0-1 and ffn columns 0-2, rank 1 head 2 and columns 3-4.
# Each rank loads the full fused QKV weight and cuts the q, k and v columns
# of its head block (offset: the heads of the ranks before it).
program block_tp2 {
  world 2
  mesh [tp = 2]
  rank 0 {
    input %x: f32[2, 4, 12]
    param %wqkv: f32[12, 36]
    param %wo: f32[8, 12]
    param %w1: f32[12, 3]
    param %w2: f32[3, 12]
    %wq: f32[12, 8] = slice(%wqkv) {starts = [0], ends = [8], axes = [1]}
    %wk: f32[12, 8] = slice(%wqkv) {starts = [12], ends = [20], axes = [1]}
    %wv: f32[12, 8] = slice(%wqkv) {starts = [24], ends = [32], axes = [1]}
    %wl: f32[12, 24] = concat(%wq, %wk, %wv) {axis = 1}
    %qkv: f32[2, 4, 24] = matmul(%x, %wl)
    %q: f32[2, 4, 8], %k: f32[2, 4, 8], %v: f32[2, 4, 8] = split(%qkv) {axis = 2, sizes = [8, 8, 8]}
    %q4: f32[2, 4, 2, 4] = reshape(%q) {shape = [2, 4, 2, 4]}
    %k4: f32[2, 4, 2, 4] = reshape(%k) {shape = [2, 4, 2, 4]}
    %v4: f32[2, 4, 2, 4] = reshape(%v) {shape = [2, 4, 2, 4]}
    %qh: f32[2, 2, 4, 4] = transpose(%q4) {perm = [0, 2, 1, 3]}
    %kt: f32[2, 2, 4, 4] = transpose(%k4) {perm = [0, 2, 3, 1]}
    %vh: f32[2, 2, 4, 4] = transpose(%v4) {perm = [0, 2, 1, 3]}
    %scores: f32[2, 2, 4, 4] = matmul(%qh, %kt)
    %scale: f32[] = constant() {value = dense<f32[], [0.5]>}
    %ss: f32[2, 2, 4, 4] = mul(%scores, %scale)
    %p: f32[2, 2, 4, 4] = softmax(%ss)
    %a: f32[2, 2, 4, 4] = matmul(%p, %vh)
    %at: f32[2, 4, 2, 4] = transpose(%a) {perm = [0, 2, 1, 3]}
    %a3: f32[2, 4, 8] = reshape(%at) {shape = [2, 4, 8]}
    %op: f32[2, 4, 12] = matmul(%a3, %wo)
    %o: f32[2, 4, 12] = all_reduce(%op) {group = "tp"}
    %h: f32[2, 4, 3] = matmul(%o, %w1)
    %g: f32[2, 4, 3] = gelu(%h)
    %mp: f32[2, 4, 12] = matmul(%g, %w2)
    %m: f32[2, 4, 12] = all_reduce(%mp) {group = "tp"}
    %y: f32[2, 4, 12] = add(%o, %m)
    output %y
  }
  rank 1 {
    input %x: f32[2, 4, 12]
    param %wqkv: f32[12, 36]
    param %wo: f32[4, 12]
    param %w1: f32[12, 2]
    param %w2: f32[2, 12]
    %wq: f32[12, 4] = slice(%wqkv) {starts = [8], ends = [12], axes = [1]}
    %wk: f32[12, 4] = slice(%wqkv) {starts = [20], ends = [24], axes = [1]}
    %wv: f32[12, 4] = slice(%wqkv) {starts = [32], ends = [36], axes = [1]}
    %wl: f32[12, 12] = concat(%wq, %wk, %wv) {axis = 1}
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
    %op: f32[2, 4, 12] = matmul(%a3, %wo)
    %o: f32[2, 4, 12] = all_reduce(%op) {group = "tp"}
    %h: f32[2, 4, 2] = matmul(%o, %w1)
    %g: f32[2, 4, 2] = gelu(%h)
    %mp: f32[2, 4, 12] = matmul(%g, %w2)
    %m: f32[2, 4, 12] = all_reduce(%mp) {group = "tp"}
    %y: f32[2, 4, 12] = add(%o, %m)
    output %y
  }
}

# BUG: rank 1 takes the cos/sin rows of positions 4..7 (as if it held the
# second half of the sequence) although TP ranks all hold positions 0..3.
program llama_attn_tp2 {
  world 2
  mesh [tp = 2]
  rank 0 {
    input %x: f32[2, 4, 16]
    input %cos: f32[1, 8, 1, 2]
    input %sin: f32[1, 8, 1, 2]
    param %g: f32[16]
    param %wq: f32[16, 8]
    param %wk: f32[16, 4]
    param %wv: f32[16, 4]
    param %wo: f32[8, 16]
    %n: f32[2, 4, 16] = rms_norm(%x, %g)
    %cs: f32[1, 4, 1, 2] = slice(%cos) {starts = [0], ends = [4], axes = [1]}
    %sn: f32[1, 4, 1, 2] = slice(%sin) {starts = [0], ends = [4], axes = [1]}
    %q: f32[2, 4, 8] = matmul(%n, %wq)
    %k: f32[2, 4, 4] = matmul(%n, %wk)
    %v: f32[2, 4, 4] = matmul(%n, %wv)
    %q4: f32[2, 4, 2, 4] = reshape(%q) {shape = [2, 4, 2, 4]}
    %k4: f32[2, 4, 1, 4] = reshape(%k) {shape = [2, 4, 1, 4]}
    %v4: f32[2, 4, 1, 4] = reshape(%v) {shape = [2, 4, 1, 4]}
    %q_lo: f32[2, 4, 2, 2] = slice(%q4) {starts = [0], ends = [2], axes = [3]}
    %q_hi: f32[2, 4, 2, 2] = slice(%q4) {starts = [2], ends = [4], axes = [3]}
    %q_a: f32[2, 4, 2, 2] = mul(%q_lo, %cs)
    %q_b: f32[2, 4, 2, 2] = mul(%q_hi, %sn)
    %q_rlo: f32[2, 4, 2, 2] = sub(%q_a, %q_b)
    %q_d: f32[2, 4, 2, 2] = mul(%q_hi, %cs)
    %q_e: f32[2, 4, 2, 2] = mul(%q_lo, %sn)
    %q_rhi: f32[2, 4, 2, 2] = add(%q_d, %q_e)
    %q_rot: f32[2, 4, 2, 4] = concat(%q_rlo, %q_rhi) {axis = 3}
    %k_lo: f32[2, 4, 1, 2] = slice(%k4) {starts = [0], ends = [2], axes = [3]}
    %k_hi: f32[2, 4, 1, 2] = slice(%k4) {starts = [2], ends = [4], axes = [3]}
    %k_a: f32[2, 4, 1, 2] = mul(%k_lo, %cs)
    %k_b: f32[2, 4, 1, 2] = mul(%k_hi, %sn)
    %k_rlo: f32[2, 4, 1, 2] = sub(%k_a, %k_b)
    %k_d: f32[2, 4, 1, 2] = mul(%k_hi, %cs)
    %k_e: f32[2, 4, 1, 2] = mul(%k_lo, %sn)
    %k_rhi: f32[2, 4, 1, 2] = add(%k_d, %k_e)
    %k_rot: f32[2, 4, 1, 4] = concat(%k_rlo, %k_rhi) {axis = 3}
    %k5: f32[2, 4, 1, 1, 4] = unsqueeze(%k_rot) {axes = [3]}
    %v5: f32[2, 4, 1, 1, 4] = unsqueeze(%v4) {axes = [3]}
    %ke: f32[2, 4, 1, 2, 4] = expand(%k5) {shape = [2, 4, 1, 2, 4]}
    %ve: f32[2, 4, 1, 2, 4] = expand(%v5) {shape = [2, 4, 1, 2, 4]}
    %kg: f32[2, 4, 2, 4] = reshape(%ke) {shape = [2, 4, 2, 4]}
    %vg: f32[2, 4, 2, 4] = reshape(%ve) {shape = [2, 4, 2, 4]}
    %qh: f32[2, 2, 4, 4] = transpose(%q_rot) {perm = [0, 2, 1, 3]}
    %kt: f32[2, 2, 4, 4] = transpose(%kg) {perm = [0, 2, 3, 1]}
    %vh: f32[2, 2, 4, 4] = transpose(%vg) {perm = [0, 2, 1, 3]}
    %scores: f32[2, 2, 4, 4] = matmul(%qh, %kt)
    %scale: f32[] = constant() {value = dense<f32[], [0.5]>}
    %ss: f32[2, 2, 4, 4] = mul(%scores, %scale)
    %p: f32[2, 2, 4, 4] = softmax(%ss)
    %a: f32[2, 2, 4, 4] = matmul(%p, %vh)
    %at: f32[2, 4, 2, 4] = transpose(%a) {perm = [0, 2, 1, 3]}
    %a3: f32[2, 4, 8] = reshape(%at) {shape = [2, 4, 8]}
    %op: f32[2, 4, 16] = matmul(%a3, %wo)
    %o: f32[2, 4, 16] = all_reduce(%op) {group = "tp"}
    %y: f32[2, 4, 16] = add(%x, %o)
    output %y
    output %o
  }
  rank 1 {
    input %x: f32[2, 4, 16]
    input %cos: f32[1, 8, 1, 2]
    input %sin: f32[1, 8, 1, 2]
    param %g: f32[16]
    param %wq: f32[16, 8]
    param %wk: f32[16, 4]
    param %wv: f32[16, 4]
    param %wo: f32[8, 16]
    %n: f32[2, 4, 16] = rms_norm(%x, %g)
    %cs: f32[1, 4, 1, 2] = slice(%cos) {starts = [4], ends = [8], axes = [1]}  # BUG: rows of positions 4..7
    %sn: f32[1, 4, 1, 2] = slice(%sin) {starts = [4], ends = [8], axes = [1]}
    %q: f32[2, 4, 8] = matmul(%n, %wq)
    %k: f32[2, 4, 4] = matmul(%n, %wk)
    %v: f32[2, 4, 4] = matmul(%n, %wv)
    %q4: f32[2, 4, 2, 4] = reshape(%q) {shape = [2, 4, 2, 4]}
    %k4: f32[2, 4, 1, 4] = reshape(%k) {shape = [2, 4, 1, 4]}
    %v4: f32[2, 4, 1, 4] = reshape(%v) {shape = [2, 4, 1, 4]}
    %q_lo: f32[2, 4, 2, 2] = slice(%q4) {starts = [0], ends = [2], axes = [3]}
    %q_hi: f32[2, 4, 2, 2] = slice(%q4) {starts = [2], ends = [4], axes = [3]}
    %q_a: f32[2, 4, 2, 2] = mul(%q_lo, %cs)
    %q_b: f32[2, 4, 2, 2] = mul(%q_hi, %sn)
    %q_rlo: f32[2, 4, 2, 2] = sub(%q_a, %q_b)
    %q_d: f32[2, 4, 2, 2] = mul(%q_hi, %cs)
    %q_e: f32[2, 4, 2, 2] = mul(%q_lo, %sn)
    %q_rhi: f32[2, 4, 2, 2] = add(%q_d, %q_e)
    %q_rot: f32[2, 4, 2, 4] = concat(%q_rlo, %q_rhi) {axis = 3}
    %k_lo: f32[2, 4, 1, 2] = slice(%k4) {starts = [0], ends = [2], axes = [3]}
    %k_hi: f32[2, 4, 1, 2] = slice(%k4) {starts = [2], ends = [4], axes = [3]}
    %k_a: f32[2, 4, 1, 2] = mul(%k_lo, %cs)
    %k_b: f32[2, 4, 1, 2] = mul(%k_hi, %sn)
    %k_rlo: f32[2, 4, 1, 2] = sub(%k_a, %k_b)
    %k_d: f32[2, 4, 1, 2] = mul(%k_hi, %cs)
    %k_e: f32[2, 4, 1, 2] = mul(%k_lo, %sn)
    %k_rhi: f32[2, 4, 1, 2] = add(%k_d, %k_e)
    %k_rot: f32[2, 4, 1, 4] = concat(%k_rlo, %k_rhi) {axis = 3}
    %k5: f32[2, 4, 1, 1, 4] = unsqueeze(%k_rot) {axes = [3]}
    %v5: f32[2, 4, 1, 1, 4] = unsqueeze(%v4) {axes = [3]}
    %ke: f32[2, 4, 1, 2, 4] = expand(%k5) {shape = [2, 4, 1, 2, 4]}
    %ve: f32[2, 4, 1, 2, 4] = expand(%v5) {shape = [2, 4, 1, 2, 4]}
    %kg: f32[2, 4, 2, 4] = reshape(%ke) {shape = [2, 4, 2, 4]}
    %vg: f32[2, 4, 2, 4] = reshape(%ve) {shape = [2, 4, 2, 4]}
    %qh: f32[2, 2, 4, 4] = transpose(%q_rot) {perm = [0, 2, 1, 3]}
    %kt: f32[2, 2, 4, 4] = transpose(%kg) {perm = [0, 2, 3, 1]}
    %vh: f32[2, 2, 4, 4] = transpose(%vg) {perm = [0, 2, 1, 3]}
    %scores: f32[2, 2, 4, 4] = matmul(%qh, %kt)
    %scale: f32[] = constant() {value = dense<f32[], [0.5]>}
    %ss: f32[2, 2, 4, 4] = mul(%scores, %scale)
    %p: f32[2, 2, 4, 4] = softmax(%ss)
    %a: f32[2, 2, 4, 4] = matmul(%p, %vh)
    %at: f32[2, 4, 2, 4] = transpose(%a) {perm = [0, 2, 1, 3]}
    %a3: f32[2, 4, 8] = reshape(%at) {shape = [2, 4, 8]}
    %op: f32[2, 4, 16] = matmul(%a3, %wo)
    %o: f32[2, 4, 16] = all_reduce(%op) {group = "tp"}
    %y: f32[2, 4, 16] = add(%x, %o)
    output %y
    output %o
  }
}

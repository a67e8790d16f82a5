# Vocab-parallel cross-entropy, TP=2 (Megatron): global max (all_reduce max),
# global sum of exp, target logit from the owning rank (masked, all_reduce).
program lm_loss_vp2 {
  world 2
  mesh [tp = 2]
  rank 0 {
    input %h: f32[8, 8]
    input %target: i64[8]
    param %wv: f32[8, 8]
    %logits: f32[8, 8] = matmul(%h, %wv)
    %lmax: f32[8, 1] = reduce_max(%logits) {axes = [1]}
    %gmax: f32[8, 1] = all_reduce(%lmax) {group = "tp", reduce = "max"}
    %sh: f32[8, 8] = sub(%logits, %gmax)
    %ex: f32[8, 8] = exp(%sh)
    %sel: f32[8, 1] = reduce_sum(%ex) {axes = [1]}
    %se: f32[8, 1] = all_reduce(%sel) {group = "tp"}
    %lse: f32[8, 1] = log(%se)
    %start: i64[] = constant() {value = dense<i64[], [0]>}
    %end: i64[] = constant() {value = dense<i64[], [8]>}
    %below: bool[8] = lt(%target, %start)
    %above: bool[8] = ge(%target, %end)
    %oob: bool[8] = or(%below, %above)
    %loc: i64[8] = sub(%target, %start)
    %zi: i64[] = constant() {value = dense<i64[], [0]>}
    %safe: i64[8] = where(%oob, %zi, %loc)
    %zf: f32[] = constant() {value = dense<f32[], [0.0]>}
    %safe2: i64[8, 1] = unsqueeze(%safe) {axes = [1]}
    %tll: f32[8, 1] = gather_elements(%sh, %safe2) {axis = 1}
    %oob2: bool[8, 1] = unsqueeze(%oob) {axes = [1]}
    %tlm: f32[8, 1] = where(%oob2, %zf, %tll)
    %tl: f32[8, 1] = all_reduce(%tlm) {group = "tp"}
    %li: f32[8, 1] = sub(%lse, %tl)
    %loss: f32[] = reduce_mean(%li) {keepdims = 0}
    output %loss
  }
  rank 1 {
    input %h: f32[8, 8]
    input %target: i64[8]
    param %wv: f32[8, 8]
    %logits: f32[8, 8] = matmul(%h, %wv)
    %lmax: f32[8, 1] = reduce_max(%logits) {axes = [1]}
    %gmax: f32[8, 1] = all_reduce(%lmax) {group = "tp", reduce = "max"}
    %sh: f32[8, 8] = sub(%logits, %gmax)
    %ex: f32[8, 8] = exp(%sh)
    %sel: f32[8, 1] = reduce_sum(%ex) {axes = [1]}
    %se: f32[8, 1] = all_reduce(%sel) {group = "tp"}
    %lse: f32[8, 1] = log(%se)
    %start: i64[] = constant() {value = dense<i64[], [8]>}
    %end: i64[] = constant() {value = dense<i64[], [16]>}
    %below: bool[8] = lt(%target, %start)
    %above: bool[8] = ge(%target, %end)
    %oob: bool[8] = or(%below, %above)
    %loc: i64[8] = sub(%target, %start)
    %zi: i64[] = constant() {value = dense<i64[], [0]>}
    %safe: i64[8] = where(%oob, %zi, %loc)
    %zf: f32[] = constant() {value = dense<f32[], [0.0]>}
    %safe2: i64[8, 1] = unsqueeze(%safe) {axes = [1]}
    %tll: f32[8, 1] = gather_elements(%sh, %safe2) {axis = 1}
    %oob2: bool[8, 1] = unsqueeze(%oob) {axes = [1]}
    %tlm: f32[8, 1] = where(%oob2, %zf, %tll)
    %tl: f32[8, 1] = all_reduce(%tlm) {group = "tp"}
    %li: f32[8, 1] = sub(%lse, %tl)
    %loss: f32[] = reduce_mean(%li) {keepdims = 0}
    output %loss
  }
}

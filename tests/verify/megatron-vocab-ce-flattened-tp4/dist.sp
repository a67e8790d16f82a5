# The same at TP=4 (sequence-major [s, b, V/4] logits per rank, b = 20): rank r
# owns vocab [4r, 4r+4); max, target logit and sum of exp are all-reduced
# (the target-logit sum over four ranks, left-nested).
program megatron_ce_tp4 {
  world 4
  mesh [tp = 4]
  rank 0 {
    input %logits: f32[2, 20, 4]
    input %target: i64[2, 20]
    %lmax: f32[2, 20] = reduce_max(%logits) {axes = [2], keepdims = 0}
    %m: f32[2, 20] = all_reduce(%lmax) {group = "tp", reduce = "max"}
    %mu: f32[2, 20, 1] = unsqueeze(%m) {axes = [2]}
    %sh: f32[2, 20, 4] = sub(%logits, %mu)
    %c_start: i64[] = constant() {value = dense<i64[], [0]>}
    %c_end: i64[] = constant() {value = dense<i64[], [4]>}
    %below: bool[2, 20] = lt(%target, %c_start)
    %above: bool[2, 20] = ge(%target, %c_end)
    %oob: bool[2, 20] = or(%below, %above)
    %loc: i64[2, 20] = sub(%target, %c_start)
    %zi: i64[] = constant() {value = dense<i64[], [0]>}
    %idx: i64[2, 20] = where(%oob, %zi, %loc)
    %flat: f32[40, 4] = reshape(%sh) {shape = [40, 4]}
    %idxf: i64[40] = reshape(%idx) {shape = [40]}
    %idxu: i64[40, 1] = unsqueeze(%idxf) {axes = [1]}
    %pk: f32[40, 1] = gather_elements(%flat, %idxu) {axis = 1}
    %pks: f32[40] = squeeze(%pk) {axes = [1]}
    %pv: f32[2, 20] = reshape(%pks) {shape = [2, 20]}
    %zf: f32[] = constant() {value = dense<f32[], [0.0]>}
    %pl: f32[2, 20] = where(%oob, %zf, %pv)
    %pred: f32[2, 20] = all_reduce(%pl) {group = "tp", reduce = "sum"}
    %ex: f32[2, 20, 4] = exp(%sh)
    %sel: f32[2, 20] = reduce_sum(%ex) {axes = [2], keepdims = 0}
    %se: f32[2, 20] = all_reduce(%sel) {group = "tp", reduce = "sum"}
    %lse: f32[2, 20] = log(%se)
    %loss: f32[2, 20] = sub(%lse, %pred)
    output %loss
  }
  rank 1 {
    input %logits: f32[2, 20, 4]
    input %target: i64[2, 20]
    %lmax: f32[2, 20] = reduce_max(%logits) {axes = [2], keepdims = 0}
    %m: f32[2, 20] = all_reduce(%lmax) {group = "tp", reduce = "max"}
    %mu: f32[2, 20, 1] = unsqueeze(%m) {axes = [2]}
    %sh: f32[2, 20, 4] = sub(%logits, %mu)
    %c_start: i64[] = constant() {value = dense<i64[], [4]>}
    %c_end: i64[] = constant() {value = dense<i64[], [8]>}
    %below: bool[2, 20] = lt(%target, %c_start)
    %above: bool[2, 20] = ge(%target, %c_end)
    %oob: bool[2, 20] = or(%below, %above)
    %loc: i64[2, 20] = sub(%target, %c_start)
    %zi: i64[] = constant() {value = dense<i64[], [0]>}
    %idx: i64[2, 20] = where(%oob, %zi, %loc)
    %flat: f32[40, 4] = reshape(%sh) {shape = [40, 4]}
    %idxf: i64[40] = reshape(%idx) {shape = [40]}
    %idxu: i64[40, 1] = unsqueeze(%idxf) {axes = [1]}
    %pk: f32[40, 1] = gather_elements(%flat, %idxu) {axis = 1}
    %pks: f32[40] = squeeze(%pk) {axes = [1]}
    %pv: f32[2, 20] = reshape(%pks) {shape = [2, 20]}
    %zf: f32[] = constant() {value = dense<f32[], [0.0]>}
    %pl: f32[2, 20] = where(%oob, %zf, %pv)
    %pred: f32[2, 20] = all_reduce(%pl) {group = "tp", reduce = "sum"}
    %ex: f32[2, 20, 4] = exp(%sh)
    %sel: f32[2, 20] = reduce_sum(%ex) {axes = [2], keepdims = 0}
    %se: f32[2, 20] = all_reduce(%sel) {group = "tp", reduce = "sum"}
    %lse: f32[2, 20] = log(%se)
    %loss: f32[2, 20] = sub(%lse, %pred)
    output %loss
  }
  rank 2 {
    input %logits: f32[2, 20, 4]
    input %target: i64[2, 20]
    %lmax: f32[2, 20] = reduce_max(%logits) {axes = [2], keepdims = 0}
    %m: f32[2, 20] = all_reduce(%lmax) {group = "tp", reduce = "max"}
    %mu: f32[2, 20, 1] = unsqueeze(%m) {axes = [2]}
    %sh: f32[2, 20, 4] = sub(%logits, %mu)
    %c_start: i64[] = constant() {value = dense<i64[], [8]>}
    %c_end: i64[] = constant() {value = dense<i64[], [12]>}
    %below: bool[2, 20] = lt(%target, %c_start)
    %above: bool[2, 20] = ge(%target, %c_end)
    %oob: bool[2, 20] = or(%below, %above)
    %loc: i64[2, 20] = sub(%target, %c_start)
    %zi: i64[] = constant() {value = dense<i64[], [0]>}
    %idx: i64[2, 20] = where(%oob, %zi, %loc)
    %flat: f32[40, 4] = reshape(%sh) {shape = [40, 4]}
    %idxf: i64[40] = reshape(%idx) {shape = [40]}
    %idxu: i64[40, 1] = unsqueeze(%idxf) {axes = [1]}
    %pk: f32[40, 1] = gather_elements(%flat, %idxu) {axis = 1}
    %pks: f32[40] = squeeze(%pk) {axes = [1]}
    %pv: f32[2, 20] = reshape(%pks) {shape = [2, 20]}
    %zf: f32[] = constant() {value = dense<f32[], [0.0]>}
    %pl: f32[2, 20] = where(%oob, %zf, %pv)
    %pred: f32[2, 20] = all_reduce(%pl) {group = "tp", reduce = "sum"}
    %ex: f32[2, 20, 4] = exp(%sh)
    %sel: f32[2, 20] = reduce_sum(%ex) {axes = [2], keepdims = 0}
    %se: f32[2, 20] = all_reduce(%sel) {group = "tp", reduce = "sum"}
    %lse: f32[2, 20] = log(%se)
    %loss: f32[2, 20] = sub(%lse, %pred)
    output %loss
  }
  rank 3 {
    input %logits: f32[2, 20, 4]
    input %target: i64[2, 20]
    %lmax: f32[2, 20] = reduce_max(%logits) {axes = [2], keepdims = 0}
    %m: f32[2, 20] = all_reduce(%lmax) {group = "tp", reduce = "max"}
    %mu: f32[2, 20, 1] = unsqueeze(%m) {axes = [2]}
    %sh: f32[2, 20, 4] = sub(%logits, %mu)
    %c_start: i64[] = constant() {value = dense<i64[], [12]>}
    %c_end: i64[] = constant() {value = dense<i64[], [16]>}
    %below: bool[2, 20] = lt(%target, %c_start)
    %above: bool[2, 20] = ge(%target, %c_end)
    %oob: bool[2, 20] = or(%below, %above)
    %loc: i64[2, 20] = sub(%target, %c_start)
    %zi: i64[] = constant() {value = dense<i64[], [0]>}
    %idx: i64[2, 20] = where(%oob, %zi, %loc)
    %flat: f32[40, 4] = reshape(%sh) {shape = [40, 4]}
    %idxf: i64[40] = reshape(%idx) {shape = [40]}
    %idxu: i64[40, 1] = unsqueeze(%idxf) {axes = [1]}
    %pk: f32[40, 1] = gather_elements(%flat, %idxu) {axis = 1}
    %pks: f32[40] = squeeze(%pk) {axes = [1]}
    %pv: f32[2, 20] = reshape(%pks) {shape = [2, 20]}
    %zf: f32[] = constant() {value = dense<f32[], [0.0]>}
    %pl: f32[2, 20] = where(%oob, %zf, %pv)
    %pred: f32[2, 20] = all_reduce(%pl) {group = "tp", reduce = "sum"}
    %ex: f32[2, 20, 4] = exp(%sh)
    %sel: f32[2, 20] = reduce_sum(%ex) {axes = [2], keepdims = 0}
    %se: f32[2, 20] = all_reduce(%sel) {group = "tp", reduce = "sum"}
    %lse: f32[2, 20] = log(%se)
    %loss: f32[2, 20] = sub(%lse, %pred)
    output %loss
  }
}

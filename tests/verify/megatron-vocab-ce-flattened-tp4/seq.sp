# Megatron's _VocabParallelCrossEntropy as torch.fx captures it at TP=1
# (tensor_parallel/cross_entropy.py): the sequential model is the same
# code with the whole vocabulary [0, 16) on one rank, the target pick on
# flattened [s*b, V] views, and the mask of out-of-shard targets; micro-batch
# b = 20 (more than the 16 values a pinned proof of the pick would cover).
graph megatron_ce {
  input %logits: f32[2, 20, 16]
  input %target: i64[2, 20]
  %lmax: f32[2, 20] = reduce_max(%logits) {axes = [2], keepdims = 0}
  %m: f32[2, 20] = identity(%lmax)
  %mu: f32[2, 20, 1] = unsqueeze(%m) {axes = [2]}
  %sh: f32[2, 20, 16] = sub(%logits, %mu)
  %c_start: i64[] = constant() {value = dense<i64[], [0]>}
  %c_end: i64[] = constant() {value = dense<i64[], [16]>}
  %below: bool[2, 20] = lt(%target, %c_start)
  %above: bool[2, 20] = ge(%target, %c_end)
  %oob: bool[2, 20] = or(%below, %above)
  %loc: i64[2, 20] = sub(%target, %c_start)
  %zi: i64[] = constant() {value = dense<i64[], [0]>}
  %idx: i64[2, 20] = where(%oob, %zi, %loc)
  %flat: f32[40, 16] = reshape(%sh) {shape = [40, 16]}
  %idxf: i64[40] = reshape(%idx) {shape = [40]}
  %idxu: i64[40, 1] = unsqueeze(%idxf) {axes = [1]}
  %pk: f32[40, 1] = gather_elements(%flat, %idxu) {axis = 1}
  %pks: f32[40] = squeeze(%pk) {axes = [1]}
  %pv: f32[2, 20] = reshape(%pks) {shape = [2, 20]}
  %zf: f32[] = constant() {value = dense<f32[], [0.0]>}
  %pl: f32[2, 20] = where(%oob, %zf, %pv)
  %pred: f32[2, 20] = identity(%pl)
  %ex: f32[2, 20, 16] = exp(%sh)
  %sel: f32[2, 20] = reduce_sum(%ex) {axes = [2], keepdims = 0}
  %se: f32[2, 20] = identity(%sel)
  %lse: f32[2, 20] = log(%se)
  %loss: f32[2, 20] = sub(%lse, %pred)
  output %loss
}

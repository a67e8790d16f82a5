# Megatron's _VocabParallelCrossEntropy as torch.fx captures it at TP=1
# (tensor_parallel/cross_entropy.py): the sequential model is the same
# code with the whole vocabulary [0, 16) on one rank, the target pick on
# flattened [s*b, V] views, and the mask of out-of-shard targets.
graph megatron_ce {
  input %logits: f32[4, 2, 16]
  input %target: i64[4, 2]
  %lmax: f32[4, 2] = reduce_max(%logits) {axes = [2], keepdims = 0}
  %m: f32[4, 2] = identity(%lmax)
  %mu: f32[4, 2, 1] = unsqueeze(%m) {axes = [2]}
  %sh: f32[4, 2, 16] = sub(%logits, %mu)
  %c_start: i64[] = constant() {value = dense<i64[], [0]>}
  %c_end: i64[] = constant() {value = dense<i64[], [16]>}
  %below: bool[4, 2] = lt(%target, %c_start)
  %above: bool[4, 2] = ge(%target, %c_end)
  %oob: bool[4, 2] = or(%below, %above)
  %loc: i64[4, 2] = sub(%target, %c_start)
  %zi: i64[] = constant() {value = dense<i64[], [0]>}
  %idx: i64[4, 2] = where(%oob, %zi, %loc)
  %flat: f32[8, 16] = reshape(%sh) {shape = [8, 16]}
  %idxf: i64[8] = reshape(%idx) {shape = [8]}
  %idxu: i64[8, 1] = unsqueeze(%idxf) {axes = [1]}
  %pk: f32[8, 1] = gather_elements(%flat, %idxu) {axis = 1}
  %pks: f32[8] = squeeze(%pk) {axes = [1]}
  %pv: f32[4, 2] = reshape(%pks) {shape = [4, 2]}
  %zf: f32[] = constant() {value = dense<f32[], [0.0]>}
  %pl: f32[4, 2] = where(%oob, %zf, %pv)
  %pred: f32[4, 2] = identity(%pl)
  %ex: f32[4, 2, 16] = exp(%sh)
  %sel: f32[4, 2] = reduce_sum(%ex) {axes = [2], keepdims = 0}
  %se: f32[4, 2] = identity(%sel)
  %lse: f32[4, 2] = log(%se)
  %loss: f32[4, 2] = sub(%lse, %pred)
  output %loss
}

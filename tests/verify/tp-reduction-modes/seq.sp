# Row statistics of a [tokens, hidden] activation: min, max, sum and mean
# over the hidden dim, the mean also with the dim dropped.
graph row_stats {
  input %x: f32[4, 8]
  %lo: f32[4, 1] = reduce_min(%x) {axes = [1], keepdims = 1}
  %hi: f32[4, 1] = reduce_max(%x) {axes = [1], keepdims = 1}
  %total: f32[4, 1] = reduce_sum(%x) {axes = [1], keepdims = 1}
  %mean: f32[4, 1] = reduce_mean(%x) {axes = [1], keepdims = 1}
  %mean_flat: f32[4] = reduce_mean(%x) {axes = [1], keepdims = 0}
  output %lo
  output %hi
  output %total
  output %mean
  output %mean_flat
}

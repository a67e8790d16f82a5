# TP=2 over the hidden dim: each rank reduces its 4 columns, then one
# all_reduce per statistic. The mean is the average (avg) of the equal
# shards' means; the flat mean is the global sum divided by the whole
# length 8.
program row_stats_tp2 {
  world 2
  mesh [tp = 2]
  rank 0..1 {
    input %x: f32[4, 4]
    %lo_l: f32[4, 1] = reduce_min(%x) {axes = [1], keepdims = 1}
    %lo: f32[4, 1] = all_reduce(%lo_l) {group = "tp", reduce = "min"}
    %hi_l: f32[4, 1] = reduce_max(%x) {axes = [1], keepdims = 1}
    %hi: f32[4, 1] = all_reduce(%hi_l) {group = "tp", reduce = "max"}
    %total_l: f32[4, 1] = reduce_sum(%x) {axes = [1], keepdims = 1}
    %total: f32[4, 1] = all_reduce(%total_l) {group = "tp", reduce = "sum"}
    %mean_l: f32[4, 1] = reduce_mean(%x) {axes = [1], keepdims = 1}
    %mean: f32[4, 1] = all_reduce(%mean_l) {group = "tp", reduce = "avg"}
    %sum_flat_l: f32[4] = reduce_sum(%x) {axes = [1], keepdims = 0}
    %sum_flat: f32[4] = all_reduce(%sum_flat_l) {group = "tp", reduce = "sum"}
    %n: f32[] = constant() {value = dense<f32[], [8.0]>}
    %mean_flat: f32[4] = div(%sum_flat, %n)
    output %lo
    output %hi
    output %total
    output %mean
    output %mean_flat
  }
}

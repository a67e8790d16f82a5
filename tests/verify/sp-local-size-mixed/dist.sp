# Sequence parallel: local sums are all-reduced and divided by the global
# sequence length 8.
program pool_sp2 {
  world 2
  mesh [tp = 2]
  rank 0..1 {
    input %x: f32[4, 8]
    param %w: f32[8, 4]
    %ls: f32[1, 8] = reduce_sum(%x) {axes = [0]}
    %s: f32[1, 8] = all_reduce(%ls) {group = "tp"}
    %n: f32[] = constant() {value = dense<f32[], [8.0]>}
    %pooled: f32[1, 8] = div(%s, %n)
    %o: f32[1, 4] = matmul(%pooled, %w)
    %t: f32[1, 4] = tanh(%o)
    output %t
  }
}

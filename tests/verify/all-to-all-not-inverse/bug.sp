# BUG: the combine all_to_all splits and concatenates along the hidden dim,
# so it does not undo the dispatch along the token dim.
program moe_ep2 {
  world 2
  mesh [ep = 2]
  rank 0..1 {
    input %x: f32[4, 8]
    param %we: f32[8, 8]
    %d: f32[4, 8] = all_to_all(%x) {group = "ep"}
    %he: f32[4, 8] = matmul(%d, %we)
    %ht: f32[4, 8] = tanh(%he)
    %y: f32[4, 8] = all_to_all(%ht) {group = "ep", split_dim = 1, concat_dim = 1}
    %out: f32[4, 8] = layer_norm(%y)
    output %out
  }
}

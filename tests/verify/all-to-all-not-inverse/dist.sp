# Expert parallel EP = 2 (GShard / DeepSpeed-MoE layout): rank r holds the
# token block r and expert r (local experts as a batch [E_local = 1, M, F],
# the expert weight sharded on dim 0). Dispatch: the block viewed as the
# dispatch buffer [E, C, M], all_to_all on dim 0 sends expert e's tokens to
# rank e, which receives [ep, C, M], views it [ep, E_local, C, M] and
# regroups it expert-major [E_local, ep*C, M] for the batched expert matmul.
# Combine: the inverse views, and the all_to_all on dim 0 again, back to
# [E, C, F] of the rank's own block.
program moe_ep2 {
  world 2
  mesh [ep = 2]
  rank 0..1 {
    input %x: f32[4, 8]
    param %we: f32[1, 8, 8]
    %xd: f32[2, 2, 8] = reshape(%x) {shape = [2, 2, 8]}
    %xa: f32[2, 2, 8] = all_to_all(%xd) {group = "ep"}
    %xg: f32[2, 1, 2, 8] = reshape(%xa) {shape = [2, 1, 2, 8]}
    %xt: f32[1, 2, 2, 8] = transpose(%xg) {perm = [1, 0, 2, 3]}
    %xl: f32[1, 4, 8] = reshape(%xt) {shape = [1, 4, 8]}
    %he: f32[1, 4, 8] = matmul(%xl, %we)
    %ht: f32[1, 4, 8] = tanh(%he)
    %hg: f32[1, 2, 2, 8] = reshape(%ht) {shape = [1, 2, 2, 8]}
    %hb: f32[2, 1, 2, 8] = transpose(%hg) {perm = [1, 0, 2, 3]}
    %hd: f32[2, 2, 8] = reshape(%hb) {shape = [2, 2, 8]}
    %ya: f32[2, 2, 8] = all_to_all(%hd) {group = "ep"}
    %y: f32[4, 8] = reshape(%ya) {shape = [4, 8]}
    %out: f32[4, 8] = layer_norm(%y)
    output %out
  }
}

# Expert parallel EP=2: rank r holds tokens [4r, 4r+4) and expert r; the
# dispatch all_to_all sends each half-block to its expert, the combine
# all_to_all (same split/concat dims) sends the results back.
program moe_ep2 {
  world 2
  mesh [ep = 2]
  rank 0..1 {
    input %x: f32[4, 8]
    param %we: f32[8, 8]
    %d: f32[4, 8] = all_to_all(%x) {group = "ep"}
    %he: f32[4, 8] = matmul(%d, %we)
    %ht: f32[4, 8] = tanh(%he)
    %y: f32[4, 8] = all_to_all(%ht) {group = "ep"}
    %out: f32[4, 8] = layer_norm(%y)
    output %out
  }
}

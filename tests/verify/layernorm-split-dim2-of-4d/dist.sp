# Context parallel on dim 2 (seq) of [b, n, s, d], gathered back on dim 2.
program ln_bnsd_cp2 {
  world 2
  mesh [tp = 2]
  rank 0..1 {
    input %x: f32[2, 3, 4, 6]
    param %g: f32[6]
    param %b: f32[6]
    %y0: f32[2, 3, 4, 6] = layer_norm(%x, %g, %b)
    %y: f32[2, 3, 8, 6] = all_gather(%y0) {group = "tp", dim = 2}
    output %y
  }
}

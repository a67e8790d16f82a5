# Gathered on dim 1 (heads) where dim 2 was split, reshaped back.
program ln_bnsd_cp2_wrong_dim {
  world 2
  mesh [tp = 2]
  rank 0..1 {
    input %x: f32[2, 3, 4, 6]
    param %g: f32[6]
    param %b: f32[6]
    %y0: f32[2, 3, 4, 6] = layer_norm(%x, %g, %b)
    %yg: f32[2, 6, 4, 6] = all_gather(%y0) {group = "tp", dim = 1}
    %y: f32[2, 3, 8, 6] = reshape(%yg) {shape = [2, 3, 8, 6]}
    output %y
  }
}

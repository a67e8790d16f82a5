# The gather on dim 0 (batch) where the sequence dim 1 was split, reshaped
# back to [2, 8, 6]: tokens of the two ranks interleave wrongly.
program ln_bsh_sp2_wrong_dim {
  world 2
  mesh [tp = 2]
  rank 0..1 {
    input %x: f32[2, 4, 6]
    param %g: f32[6]
    param %b: f32[6]
    %y0: f32[2, 4, 6] = layer_norm(%x, %g, %b)
    %yg: f32[4, 4, 6] = all_gather(%y0) {group = "tp", dim = 0}
    %y: f32[2, 8, 6] = reshape(%yg) {shape = [2, 8, 6]}
    output %y
  }
}

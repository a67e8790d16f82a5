# Sequence parallel on dim 1 of [b, s, h]: each rank normalizes its tokens,
# then the sequence is gathered back along dim 1.
program ln_bsh_sp2 {
  world 2
  mesh [tp = 2]
  rank 0..1 {
    input %x: f32[2, 4, 6]
    param %g: f32[6]
    param %b: f32[6]
    %y0: f32[2, 4, 6] = layer_norm(%x, %g, %b)
    %y: f32[2, 8, 6] = all_gather(%y0) {group = "tp", dim = 1}
    output %y
  }
}

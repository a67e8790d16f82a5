program tp2 {
  world 2
  mesh [tp = 2]
  rank 0..1 {
    input %x: f32[4, 8]
    %y = all_reduce(%x) {group = "tq"}
    output %y
  }
}

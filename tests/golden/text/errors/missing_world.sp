program p {
  mesh [tp = 2]
  rank 0..1 {
    input %x: f32[4]
    output %x
  }
}

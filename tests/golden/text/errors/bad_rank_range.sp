program p {
  world 4
  rank 3..1 {
    input %x: f32[4]
    output %x
  }
}

program p {
  world 2
  rank 0 {
    input %x: f32[4]
    output %x
  }
}

program p {
  world 0
  rank 0 {
    input %x: f32[4]
    output %x
  }
}

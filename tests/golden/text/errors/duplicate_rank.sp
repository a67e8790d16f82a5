program p {
  world 2
  rank 0..1 {
    input %x: f32[4]
    output %x
  }
  rank 1 {
    input %x: f32[4]
    output %x
  }
}

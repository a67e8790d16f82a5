program p {
  world 2
  group pairs = [[0, 1], [1, 2]]
  rank 0..1 {
    input %x: f32[4]
    output %x
  }
}

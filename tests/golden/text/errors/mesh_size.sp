program p {
  world 8
  mesh [dp = 2, tp = 2]
  rank 0..7 {
    input %x: f32[4]
    output %x
  }
}

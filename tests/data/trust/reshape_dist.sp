program rep2 {
  world 2
  rank 0..1 {
    input %x: f32[4]
    %y: f32[4] = neg(%x)
    output %y
  }
}

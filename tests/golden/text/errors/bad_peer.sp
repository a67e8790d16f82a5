program p {
  world 2
  rank 0 {
    input %x: f32[4]
    send(%x) {peer = 2}
  }
  rank 1 {
    %x = recv() {peer = 0, dtype = f32, shape = [4]}
    output %x
  }
}

program p {
  world 2
  world 4
}

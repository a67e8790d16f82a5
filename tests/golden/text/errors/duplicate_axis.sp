program p {
  world 4
  mesh [tp = 2, tp = 2]
}

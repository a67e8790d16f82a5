graph g {
  %c = constant() {value = dense<f32[2, 2], [1.0, 2.0, 3.0]>}
  output %c
}

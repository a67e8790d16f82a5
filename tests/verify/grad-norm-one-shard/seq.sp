# Gradient clipping by global norm (max norm 0.5).
graph clip {
  input %g: f32[8, 16]
  %sq: f32[8, 16] = mul(%g, %g)
  %ss: f32[] = reduce_sum(%sq) {keepdims = 0}
  %norm: f32[] = sqrt(%ss)
  %maxn: f32[] = constant() {value = dense<f32[], [0.5]>}
  %one: f32[] = constant() {value = dense<f32[], [1.0]>}
  %ratio: f32[] = div(%maxn, %norm)
  %coef: f32[] = min(%ratio, %one)
  %gc: f32[8, 16] = mul(%g, %coef)
  output %gc, %norm
}

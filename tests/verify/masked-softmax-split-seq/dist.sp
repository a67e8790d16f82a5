# Queries split four ways along the sequence (dim 2, context parallel):
# rank r masks its rows with rows 2r..2r+1 of the replicated mask, then
# the probabilities are gathered.
program masked_softmax_cp4 {
  world 4
  mesh [cp = 4]
  rank 0 {
    input %x: f32[2, 3, 2, 8]
    input %mfull: bool[1, 1, 8, 8]
    %m: bool[1, 1, 2, 8] = slice(%mfull) {starts = [0], ends = [2], axes = [2]}
    %c: f32[] = constant() {value = dense<f32[], [-10000.0]>}
    %y: f32[2, 3, 2, 8] = where(%m, %c, %x)
    %p0: f32[2, 3, 2, 8] = softmax(%y)
    %p: f32[2, 3, 8, 8] = all_gather(%p0) {group = "cp", dim = 2}
    output %p
  }
  rank 1 {
    input %x: f32[2, 3, 2, 8]
    input %mfull: bool[1, 1, 8, 8]
    %m: bool[1, 1, 2, 8] = slice(%mfull) {starts = [2], ends = [4], axes = [2]}
    %c: f32[] = constant() {value = dense<f32[], [-10000.0]>}
    %y: f32[2, 3, 2, 8] = where(%m, %c, %x)
    %p0: f32[2, 3, 2, 8] = softmax(%y)
    %p: f32[2, 3, 8, 8] = all_gather(%p0) {group = "cp", dim = 2}
    output %p
  }
  rank 2 {
    input %x: f32[2, 3, 2, 8]
    input %mfull: bool[1, 1, 8, 8]
    %m: bool[1, 1, 2, 8] = slice(%mfull) {starts = [4], ends = [6], axes = [2]}
    %c: f32[] = constant() {value = dense<f32[], [-10000.0]>}
    %y: f32[2, 3, 2, 8] = where(%m, %c, %x)
    %p0: f32[2, 3, 2, 8] = softmax(%y)
    %p: f32[2, 3, 8, 8] = all_gather(%p0) {group = "cp", dim = 2}
    output %p
  }
  rank 3 {
    input %x: f32[2, 3, 2, 8]
    input %mfull: bool[1, 1, 8, 8]
    %m: bool[1, 1, 2, 8] = slice(%mfull) {starts = [6], ends = [8], axes = [2]}
    %c: f32[] = constant() {value = dense<f32[], [-10000.0]>}
    %y: f32[2, 3, 2, 8] = where(%m, %c, %x)
    %p0: f32[2, 3, 2, 8] = softmax(%y)
    %p: f32[2, 3, 8, 8] = all_gather(%p0) {group = "cp", dim = 2}
    output %p
  }
}

# Every rank masks its rows with the first rows of the mask: the causal
# mask is not offset by the rank's position in the sequence.
program masked_softmax_cp4_mask_offset {
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
    %m: bool[1, 1, 2, 8] = slice(%mfull) {starts = [0], ends = [2], axes = [2]}
    %c: f32[] = constant() {value = dense<f32[], [-10000.0]>}
    %y: f32[2, 3, 2, 8] = where(%m, %c, %x)
    %p0: f32[2, 3, 2, 8] = softmax(%y)
    %p: f32[2, 3, 8, 8] = all_gather(%p0) {group = "cp", dim = 2}
    output %p
  }
  rank 2 {
    input %x: f32[2, 3, 2, 8]
    input %mfull: bool[1, 1, 8, 8]
    %m: bool[1, 1, 2, 8] = slice(%mfull) {starts = [0], ends = [2], axes = [2]}
    %c: f32[] = constant() {value = dense<f32[], [-10000.0]>}
    %y: f32[2, 3, 2, 8] = where(%m, %c, %x)
    %p0: f32[2, 3, 2, 8] = softmax(%y)
    %p: f32[2, 3, 8, 8] = all_gather(%p0) {group = "cp", dim = 2}
    output %p
  }
  rank 3 {
    input %x: f32[2, 3, 2, 8]
    input %mfull: bool[1, 1, 8, 8]
    %m: bool[1, 1, 2, 8] = slice(%mfull) {starts = [0], ends = [2], axes = [2]}
    %c: f32[] = constant() {value = dense<f32[], [-10000.0]>}
    %y: f32[2, 3, 2, 8] = where(%m, %c, %x)
    %p0: f32[2, 3, 2, 8] = softmax(%y)
    %p: f32[2, 3, 8, 8] = all_gather(%p0) {group = "cp", dim = 2}
    output %p
  }
}

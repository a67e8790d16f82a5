# Context parallel with Megatron's load-balanced chunks (cp rank c holds
# token pieces c and 3 - c of 4) and tensor parallel inside it: sequence
# parallel splits each chunk over tp, gathered back before the
# column-parallel projection; the activations are gathered over cp (pieces
# in the order 0, 3, 1, 2) and put back in S's order.
program d {
  world 4
  mesh [cp = 2, tp = 2]
  rank 0..3 {
    input %x: f32[4, 6]
    param %w: f32[6, 2]
    %xg: f32[8, 6] = all_gather(%x) {group = "tp", dim = 0}
    %p: f32[8, 2] = matmul(%xg, %w)
    %r: f32[8, 2] = relu(%p)
    %rg: f32[16, 2] = all_gather(%r) {group = "cp", dim = 0}
    %h0: f32[4, 2], %h1: f32[4, 2], %h2: f32[4, 2], %h3: f32[4, 2] = split(%rg) {axis = 0, sizes = [4, 4, 4, 4]}
    %o: f32[16, 2] = concat(%h0, %h2, %h3, %h1) {axis = 0}
    output %o
  }
}

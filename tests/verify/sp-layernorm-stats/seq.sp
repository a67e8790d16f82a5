# apex fused_layer_norm_affine_fwd as shardproof decomposes it
# (frontend/decomp/apex.decomp) on a sequence-first [s, b, h] activation:
# the output, and the mean and inverse std (1/sqrt(var + eps)) of each of
# the s*b rows, flattened, which Megatron saves for the backward pass.
graph ln_stats {
  input %x: f32[8, 2, 6]
  param %gamma: f32[6]
  param %beta: f32[6]
  %y: f32[8, 2, 6] = layer_norm(%x, %gamma, %beta) {epsilon = 1e-5}
  %m: f32[8, 2, 1] = reduce_mean(%x) {axes = [2], keepdims = 1}
  %c: f32[8, 2, 6] = sub(%x, %m)
  %c2: f32[8, 2, 6] = mul(%c, %c)
  %var: f32[8, 2, 1] = reduce_mean(%c2) {axes = [2], keepdims = 1}
  %e: f32[] = constant() {value = dense<f32[], [1e-5]>}
  %ve: f32[8, 2, 1] = add(%var, %e)
  %r: f32[8, 2, 1] = rsqrt(%ve)
  %mean: f32[16] = reshape(%m) {shape = [16]}
  %invvar: f32[16] = reshape(%r) {shape = [16]}
  output %y
  output %mean
  output %invvar
}

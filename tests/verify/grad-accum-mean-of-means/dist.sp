# Two micro-batches of 8 tokens (one per dp rank): masked loss sums and
# token counts are summed, then divided once.
program masked_loss_dp2 {
  world 2
  mesh [dp = 2]
  rank 0..1 {
    input %x: f32[8, 4]
    input %mask: bool[8]
    param %w: f32[4, 4]
    %h: f32[8, 4] = matmul(%x, %w)
    %a: f32[8, 4] = tanh(%h)
    %a2: f32[8, 4] = mul(%a, %a)
    %li: f32[8] = reduce_sum(%a2) {axes = [1], keepdims = 0}
    %mf: f32[8] = cast(%mask) {to = f32}
    %lm: f32[8] = mul(%li, %mf)
    %numl: f32[] = reduce_sum(%lm) {keepdims = 0}
    %denl: f32[] = reduce_sum(%mf) {keepdims = 0}
    %num: f32[] = all_reduce(%numl) {group = "dp"}
    %den: f32[] = all_reduce(%denl) {group = "dp"}
    %loss: f32[] = div(%num, %den)
    output %loss
  }
}

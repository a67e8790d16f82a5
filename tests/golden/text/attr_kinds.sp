# Every attribute kind, literal form and name form the format has.
graph "attr kinds" {
  input %"token ids": i64[4, "n tok"]
  input %x: f32[4, 6]
  input %layers.0/attn:q: f16[2, 3]
  param %bias: f32[6] = dense<[0.5, -1.0, 1e-07, 3.4028234663852886e+38, -0.0, 1.0]>
  param %table: f32[100, 6]  @ node "embedding.weight"
  # int (negative), float (int literal and exponent), str
  %sm: f32[4, 6] = softmax(%x) {axis = 0}
  %cl: f32[4, 6] = clip(%sm) {min = -1, max = 6.5e+30}
  %ga: f32[4, 6] = gelu(%cl) {approximate = "tanh"}
  # ints, including the int64 maximum and an empty list
  %sl: f32[4, 3] = slice(%ga) {starts = [-3], ends = [9223372036854775807], axes = [1], steps = [1]}
  %rs: f32[1, 1] = reduce_sum(%sl) {axes = []}
  %tr: f32[3, 4] = transpose(%sl) {perm = [1, 0]}
  # dims with symbols, products and quoted symbols
  %em: f32[4, "n tok", 6] = gather(%table, %"token ids")  as "Gather_0"  @ "model.onnx":0 node "Gather_0"
  %fl: f32[4*"n tok", 6] = reshape(%em) {shape = [4*"n tok", 6]}
  %ex: f32[2, 4*"n tok", 6] = expand(%fl) {shape = [2, 1, 6]}
  # dtypes
  %h: f32[2, 3] = cast(%layers.0/attn:q) {to = f32}
  %rg: i32[5] = range() {start = 0.0, limit = 5.0, dtype = i32}
  %oh: f16[5, 3] = one_hot(%rg) {depth = 3, dtype = f16, on = 1.0, off = 0.0}
  # tensors of every dtype, scalar and empty
  %c_f64: f64[2] = constant() {value = dense<f64[2], [0.1, -2.5e-300]>}
  %c_f16: f16[3] = constant() {value = dense<f16[3], [0.0999755859375, 65504.0, -inf]>}
  %c_bf16: bf16[2, 1] = constant() {value = dense<bf16[2, 1], [0.1000976562, 3.3895313892515355e+38]>}
  %c_i64: i64[2, 2] = constant() {value = dense<i64[2, 2], [1, -2, 9223372036854775807, -9223372036854775808]>}
  %c_i32: i32[] = constant() {value = dense<i32[], [-2147483648]>}
  %c_i16: i16[1] = constant() {value = dense<i16[1], [32767]>}
  %c_i8: i8[2] = constant() {value = dense<i8[2], [-128, 127]>}
  %c_u8: u8[2] = constant() {value = dense<u8[2], [0, 255]>}
  %c_bool: bool[3] = constant() {value = dense<bool[3], [true, false, 1]>}
  %c_empty: f32[0, 4] = constant() {value = dense<f32[0, 4], []>}
  %c_nan: f32[2] = constant() {value = dense<f32[2], [nan, inf]>}
  # multiple results
  %top_v: f32[4, 2], %top_i: i64[4, 2] = topk(%ga) {k = 2}
  %p0, %p1 = split(%x) {axis = 1, sizes = [2, 4]}
  output %rs, %tr, %ex, %h, %oh, %top_v, %top_i
  output %p0
  output %p1, %c_f64, %c_f16, %c_bf16, %c_i64, %c_i32, %c_i16, %c_i8, %c_u8, %c_bool, %c_empty, %c_nan
}

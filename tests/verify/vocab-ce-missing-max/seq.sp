# LM head and mean cross-entropy over a 16-token vocabulary.
graph lm_loss {
  input %h: f32[8, 8]
  input %target: i64[8]
  param %wv: f32[8, 16]
  %logits: f32[8, 16] = matmul(%h, %wv)
  %loss: f32[] = cross_entropy(%logits, %target)
  output %loss
}

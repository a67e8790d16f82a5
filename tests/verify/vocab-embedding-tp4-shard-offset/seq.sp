# Embedding lookup: a [2, 4] batch of token ids into a 16-row table.
graph embed {
  input %ids: i64[2, 4]
  param %table: f32[16, 8]
  %emb: f32[2, 4, 8] = gather(%table, %ids)
  output %emb
}

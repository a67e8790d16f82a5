# Embedding lookup: 8 token ids into a 16-row table.
graph embed {
  input %ids: i64[8]
  param %table: f32[16, 8]
  %emb: f32[8, 8] = gather(%table, %ids)
  output %emb
}

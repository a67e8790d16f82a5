# Vocab-parallel embedding, TP=2: rank r owns rows [8r, 8r+8); ids outside
# the shard look up row 0 and their rows are zeroed before the all_reduce.
program embed_vp2 {
  world 2
  mesh [tp = 2]
  rank 0 {
    input %ids: i64[8]
    param %table: f32[8, 8]
    %start: i64[] = constant() {value = dense<i64[], [0]>}
    %end: i64[] = constant() {value = dense<i64[], [8]>}
    %below: bool[8] = lt(%ids, %start)
    %above: bool[8] = ge(%ids, %end)
    %oob: bool[8] = or(%below, %above)
    %loc: i64[8] = sub(%ids, %start)
    %zi: i64[] = constant() {value = dense<i64[], [0]>}
    %safe: i64[8] = where(%oob, %zi, %loc)
    %zf: f32[] = constant() {value = dense<f32[], [0.0]>}
    %g: f32[8, 8] = gather(%table, %safe)
    %oob2: bool[8, 1] = unsqueeze(%oob) {axes = [1]}
    %gm: f32[8, 8] = where(%oob2, %zf, %g)
    %emb: f32[8, 8] = all_reduce(%gm) {group = "tp"}
    output %emb
  }
  rank 1 {
    input %ids: i64[8]
    param %table: f32[8, 8]
    %start: i64[] = constant() {value = dense<i64[], [8]>}
    %end: i64[] = constant() {value = dense<i64[], [16]>}
    %below: bool[8] = lt(%ids, %start)
    %above: bool[8] = ge(%ids, %end)
    %oob: bool[8] = or(%below, %above)
    %loc: i64[8] = sub(%ids, %start)
    %zi: i64[] = constant() {value = dense<i64[], [0]>}
    %safe: i64[8] = where(%oob, %zi, %loc)
    %zf: f32[] = constant() {value = dense<f32[], [0.0]>}
    %g: f32[8, 8] = gather(%table, %safe)
    %oob2: bool[8, 1] = unsqueeze(%oob) {axes = [1]}
    %gm: f32[8, 8] = where(%oob2, %zf, %g)
    %emb: f32[8, 8] = all_reduce(%gm) {group = "tp"}
    output %emb
  }
}

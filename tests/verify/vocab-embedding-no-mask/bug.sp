# BUG: out-of-shard ids are clamped to a valid row but their looked-up rows
# are not masked out, so the all_reduce adds garbage rows.
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
    %emb: f32[8, 8] = all_reduce(%g) {group = "tp"}
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
    %emb: f32[8, 8] = all_reduce(%g) {group = "tp"}
    output %emb
  }
}

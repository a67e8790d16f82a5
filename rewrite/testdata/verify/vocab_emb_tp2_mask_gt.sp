program vemb {
  world 2
  mesh [tp = 2]
  rank 0 {
    input %ids: i64[4]
    param %table: f32[2, 2]
    %start = constant() {value = dense<i64[], [0]>}
    %end = constant() {value = dense<i64[], [2]>}
    %below = lt(%ids, %start)
    %above = gt(%ids, %end)
    %oob = or(%below, %above)
    %loc = sub(%ids, %start)
    %zi = constant() {value = dense<i64[], [0]>}
    %safe = where(%oob, %zi, %loc)
    %zf = constant() {value = dense<f32[], [0.0]>}
    %g = gather(%table, %safe)
    %oob2 = unsqueeze(%oob) {axes = [1]}
    %gm = where(%oob2, %zf, %g)
    %e = all_reduce(%gm) {group = "tp"}
    output %e
  }
  rank 1 {
    input %ids: i64[4]
    param %table: f32[2, 2]
    %start = constant() {value = dense<i64[], [2]>}
    %end = constant() {value = dense<i64[], [4]>}
    %below = lt(%ids, %start)
    %above = gt(%ids, %end)
    %oob = or(%below, %above)
    %loc = sub(%ids, %start)
    %zi = constant() {value = dense<i64[], [0]>}
    %safe = where(%oob, %zi, %loc)
    %zf = constant() {value = dense<f32[], [0.0]>}
    %g = gather(%table, %safe)
    %oob2 = unsqueeze(%oob) {axes = [1]}
    %gm = where(%oob2, %zf, %g)
    %e = all_reduce(%gm) {group = "tp"}
    output %e
  }
}

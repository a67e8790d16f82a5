# A 2x2 mesh with an explicit group and collectives over axes, joined axes
# and the named group.
program mesh_groups {
  world 4
  mesh [dp = 2, tp = 2]
  group pairs = [[0, 3], [1, 2]]
  group "odd ranks" = [[1, 3]]
  rank 0..3 {
    input %x: f32[8, hidden]
    %g: f32[8, 2*hidden] = all_gather(%x) {group = "tp", dim = 1}
    %r: f32[4, 2*hidden] = reduce_scatter(%g) {group = "dp", reduce = "avg"}
    %b: f32[4, 2*hidden] = broadcast(%r) {group = "pairs", root = 1}
    %t: f32[4, 2*hidden] = all_to_all(%b) {group = "dp+tp"}
    %m: f32[4, 2*hidden] = all_reduce(%t) {group = "dp+tp", reduce = "max"}
    output %m
  }
}

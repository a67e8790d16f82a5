# Three ranks, three two-rank groups (0,1), (1,2), (2,0). Each rank
# broadcasts on its two groups; every group sees its collectives in the same
# order on both members, but the order forms a cycle: rank 0 waits in g01
# for rank 1, rank 1 in g12 for rank 2, rank 2 in g20 for rank 0. It hangs.
program cycle3 {
  world 3
  group g01 = [[0, 1]]
  group g12 = [[1, 2]]
  group g20 = [[2, 0]]
  rank 0 {
    input %x: f32[4]
    %a: f32[4] = broadcast(%x) {group = "g01", root = 0}
    %b: f32[4] = broadcast(%a) {group = "g20", root = 0}
    %y: f32[4] = neg(%b)
    %z: f32[4] = neg(%y)
    output %z
  }
  rank 1 {
    input %x: f32[4]
    %a: f32[4] = broadcast(%x) {group = "g12", root = 0}
    %b: f32[4] = broadcast(%a) {group = "g01", root = 0}
    %y: f32[4] = neg(%b)
    %z: f32[4] = neg(%y)
    output %z
  }
  rank 2 {
    input %x: f32[4]
    %a: f32[4] = broadcast(%x) {group = "g20", root = 0}
    %b: f32[4] = broadcast(%a) {group = "g12", root = 0}
    %y: f32[4] = neg(%b)
    %z: f32[4] = neg(%y)
    output %z
  }
}

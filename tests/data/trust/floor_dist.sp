# D: each rank takes the floor of its transposed column shard and outputs
# it flattened; S's y is reshape(concat(dist[0].o, dist[1].o), [6, 4]).
program floor_tp2 {
  world 2
  mesh [tp = 2]
  rank 0..1 {
    input %x: f32[4, 3]
    %t: f32[3, 4] = transpose(%x) {perm = [1, 0]}
    %f: f32[3, 4] = floor(%t)
    %o: f32[12] = reshape(%f) {shape = [12]}
    output %o
  }
}

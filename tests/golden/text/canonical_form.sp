# Hand-written input: types of results omitted, defaults spelled out,
# several statements per line, odd spacing. The printed form is canonical.
graph   canonical{input %a :f32[2,3];input %b : f32[ 3 , seq*2 ]
  %c=matmul(%a,%b) ; %d = softmax( %c ) { axis = -1 }
  %e = layer_norm(%d) {axis=-1,epsilon=0.001}
  %f = reduce_mean(%e) {keepdims = 0, axes = [1]}   # keepdims before axes
  %z = identity(%f) @ node "Identity_7"
  output %z}

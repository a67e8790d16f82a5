#pragma once
// torch's functional collectives gather and reduce-scatter along dim 0 only;
// along another dim d they are written as an idiom (torch/distributed/
// _functional_collectives.py, which DTensor's redistribute and every
// torch 2.x capture of it print):
//
//   gather:  g = all_gather_into_tensor(x, n, group)       # dim 0
//            p_0, ..., p_{n-1} = split(g, x.shape[0])        # dim 0
//            y = cat([p_0, ..., p_{n-1}], d)
//   scatter: p_0, ..., p_{n-1} = split(x, x.shape[d] / n, d)
//            c = cat([p_0, ..., p_{n-1}], 0)
//            y = reduce_scatter_tensor(c, op, n, group)      # dim 0
//
// Each is exactly one collective along d: p_j of the gather is member j's
// x (members in group order), so y is their concat along d; chunk r of c
// along dim 0 is p_r, so y on member r is the reduction of chunk r of x
// along d. fuseDimCollectives rewrites y's node into all_gather(x, dim=d)
// or reduce_scatter(x, dim=d) where every condition of that identity holds
// (n the group's size on the rank, equal pieces, every piece once, in
// order), and leaves everything else as it is: the pieces, now maybe
// unused, stay in the graph.
#include "ir/program.h"

namespace sp::frontend {

// The program with the idioms above fused; `fused` counts the rewrites.
Result<ir::Program> fuseDimCollectives(const ir::Program& p, int64_t* fused = nullptr);

}  // namespace sp::frontend

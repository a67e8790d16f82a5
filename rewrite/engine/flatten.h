#pragma once
// A distributed program as one sequential graph, for the "D refines D" check
// (issue 3: every refinement test also checks that S refines S and D refines
// D). Every rank's values are renamed `r<rank>_<name>`; collectives are
// matched across ranks exactly as lowerProgram matches them and replaced by
// their sequential meaning written with ordinary ops:
//   all_reduce       add (sum, avg then div by g) / max / min chain in member order
//   all_gather(dim)  concat of the members' inputs
//   reduce_scatter   slice k of the reduction (along dim)
//   all_to_all       member j: concat over i of chunk j of member i's input
//   broadcast(root)  the root's input
//   send/recv        the received value is the sent one
// The result is independent of the relation engine's lowering (it is what
// ir/collectives.h computes), so verifying D against it checks the engine's
// treatment of collectives and of every op D uses.
#include <string>

#include "ir/program.h"
#include "rewrite/relation/relation_text.h"

namespace sp::rewrite {

std::string flatName(int64_t rank, const std::string& name);

// Needs concrete sizes on the scattered / split dims (error otherwise).
Result<ir::Graph> flattenProgram(const ir::Program& p);

// Input relations for "D refines D": dist[r].x = seq.r<r>_x for every input
// and parameter of every rank.
Result<RelationFile> identityRelations(const ir::Program& p);

}  // namespace sp::rewrite

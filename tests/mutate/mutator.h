#pragma once
// Mutation testing of the verifier: from a correct distributed program D
// (and its input relations) derive mutants, each tagged with a stable
// kebab-case kind. Fault-injecting kinds model the bug classes of
// /work/shared/BUGS.md (a dropped or wrong collective, a wrong dim, group,
// reduce mode, constant, peer or shard); semantics-preserving kinds rewrite D
// without changing what it computes, so the verifier must never refute them.
// Every mutant is rebuilt through GraphBuilder/ProgramBuilder; one that fails
// validation is "stillborn" and only counted.
#include <map>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/program.h"
#include "rewrite/relation/relation_text.h"

namespace sp::mutate {

struct Mutant {
  std::string kind;         // "drop-collective", "insert-identity", ...
  std::string description;  // "all_reduce 'r' on ranks 0,1 replaced by identity"
  bool preserving = false;  // a semantics-preserving rewrite
  ir::Program dist;
  rewrite::RelationFile relations;  // the case's, or a mutated copy
};

struct MutantSet {
  std::vector<Mutant> mutants;             // in generation order
  std::map<std::string, int> stillborn;    // per kind: failed validation
};

// Every fault-injecting kind and every semantics-preserving kind, in order.
const std::vector<std::string>& faultKinds();
const std::vector<std::string>& preservingKinds();
// The fault kinds that break the one global order of collectives on one
// rank (deadlock.cpp): verify() must refute them or reject D, never verify.
const std::vector<std::string>& deadlockKinds();

// All mutants of `dist`; `seq` types the relations for relation mutants.
MutantSet generateMutants(const ir::Graph& seq, const ir::Program& dist,
                          const rewrite::RelationFile& relations);

// At most `cap` mutants, taken round-robin over kinds (each kind's own order
// kept), so every kind is represented before any kind gets a second one.
std::vector<const Mutant*> selectMutants(const MutantSet& set, size_t cap);

}  // namespace sp::mutate

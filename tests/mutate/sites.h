#pragma once
// Shared pieces of the mutators: sites (one node key across the ranks that
// hold it, so SPMD ranks are mutated alike) and the sink that rebuilds each
// mutant and counts the stillborn ones.
#include <string>
#include <utility>
#include <vector>

#include "tests/mutate/mutator.h"
#include "ir/program_edit.h"

namespace sp::mutate {

using ir::GraphSpec;
using ir::LeafSpec;
using ir::NodeSpec;
using ir::ProgramSpec;
using ir::groupNames;
using ir::toSpec;

// A node identified by its first output (or node name) and op, with its
// position (rank, node index) on every rank that has it.
struct Site {
  std::string key;
  ir::OpKind op;
  std::vector<std::pair<size_t, size_t>> at;
  std::string ranks() const;  // "0,1"
};

std::vector<Site> sites(const ProgramSpec& s);
bool isCollective(ir::OpKind op);

// Type of value `name` on `rank` of the original program (the mutators read
// shapes from it); nullptr if absent.
const ir::TensorType* typeOf(const ir::Program& p, size_t rank, const std::string& name);

class Sink {
 public:
  Sink(MutantSet* out, const rewrite::RelationFile& rel) : out_(out), rel_(rel) {}
  void add(const std::string& kind, const std::string& desc, bool preserving, const ProgramSpec& s);
  void add(const std::string& kind, const std::string& desc, bool preserving, const ProgramSpec& s,
           const rewrite::RelationFile& rel);
  int& stillborn(const std::string& kind) { return out_->stillborn[kind]; }

 private:
  MutantSet* out_;
  const rewrite::RelationFile& rel_;
};

void addFaultMutants(const ir::Graph& seq, const ir::Program& dist, const rewrite::RelationFile& rel,
                     Sink& sink);
void addPreservingMutants(const ir::Program& dist, Sink& sink);
void addDeadlockMutants(const ir::Program& dist, Sink& sink);

}  // namespace sp::mutate

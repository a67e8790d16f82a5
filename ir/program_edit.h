#pragma once
// An editable copy of a distributed program: plain structs that mutators
// (tests/mutate) and repair search (rewrite/search/repair.cpp) change freely, rebuilt through GraphBuilder/ProgramBuilder (which validate
// names, arity, attributes, acyclicity, shapes and groups) into a Program.
#include <optional>
#include <string>
#include <vector>

#include "ir/program.h"

namespace sp::ir {

struct LeafSpec {
  std::string name;
  TensorType type;
  bool isParam = false;
  std::optional<Tensor> data;
};

struct NodeSpec {
  OpKind op;
  std::string name;  // empty: the builder's default (first output's name)
  std::vector<std::string> inputs, outputs;
  AttrMap attrs;
  SourceLoc loc;
};

struct GraphSpec {
  std::string name;
  std::vector<LeafSpec> leaves;
  std::vector<NodeSpec> nodes;  // declaration order (the builder sorts)
  std::vector<std::string> outputs;

  // Index of the node producing value `v`, or -1.
  int producer(const std::string& v) const;
  // Every use of value `from` (node inputs and graph outputs) reads `to`.
  void renameUses(const std::string& from, const std::string& to);
  // A value name not used in this graph, derived from `base`.
  std::string freshName(const std::string& base) const;
};

struct ProgramSpec {
  int64_t worldSize = 0;
  Mesh mesh;
  std::map<std::string, GroupPartition> groups;
  std::vector<GraphSpec> ranks;
  // Optional (empty: every rank is built from its own spec). sameAs[r] is
  // the rank whose spec stands for rank r's (sameAs[r] == r for those that
  // have their own; ranks[r] of the others is not read), and buildProgram
  // builds one graph for all of them (ir::Program's rank classes). Only
  // writers that know the specs equal set it (toSpecShared, differentiate,
  // joinTrainingStep); an edit of one rank's spec must clear it.
  std::vector<int64_t> sameAs;
};

GraphSpec graphSpec(const Graph& g);
ProgramSpec toSpec(const Program& p);
// One spec per rank class (sameAs set): the specs of the first rank of each
// class only, for edits that apply to every rank of a class alike.
ProgramSpec toSpecShared(const Program& p);
// Fails when the edited graph is invalid (a graph without collectives: S).
Result<Graph> buildGraph(const GraphSpec& s);
// Fails when the edited program is invalid (a "stillborn" mutant).
Result<Program> buildProgram(const ProgramSpec& s);

// Group names a collective may name in this program: every mesh axis, every
// named group, and (with two or more axes) all axes joined by '+'.
std::vector<std::string> groupNames(const ProgramSpec& s);

}  // namespace sp::ir

#pragma once
// An editable copy of a distributed program: plain structs that mutators
// change freely, rebuilt through GraphBuilder/ProgramBuilder (which validate
// names, arity, attributes, acyclicity, shapes and groups) into a Program.
#include <optional>
#include <string>
#include <vector>

#include "ir/program.h"

namespace sp::mutate {

struct LeafSpec {
  std::string name;
  ir::TensorType type;
  bool isParam = false;
  std::optional<ir::Tensor> data;
};

struct NodeSpec {
  ir::OpKind op;
  std::string name;  // empty: the builder's default (first output's name)
  std::vector<std::string> inputs, outputs;
  ir::AttrMap attrs;
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
  ir::Mesh mesh;
  std::map<std::string, ir::GroupPartition> groups;
  std::vector<GraphSpec> ranks;
};

ProgramSpec toSpec(const ir::Program& p);
// Fails when the edited program is invalid (a "stillborn" mutant).
Result<ir::Program> build(const ProgramSpec& s);

// Group names a collective may name in this program: every mesh axis, every
// named group, and (with two or more axes) all axes joined by '+'.
std::vector<std::string> groupNames(const ProgramSpec& s);

}  // namespace sp::mutate

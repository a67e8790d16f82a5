#pragma once
// Distributed programs: a world of ranks, a device mesh with named axes, named
// process groups and one graph per rank (MPMD). Collectives in rank graphs
// name a group: a mesh axis ("tp"), several axes joined by '+' ("dp+tp"), or
// a group declared explicitly by its member lists.
#include <map>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace sp::ir {

struct MeshAxis {
  std::string name;
  int64_t size = 1;
};

// Ranks are laid out row-major over the axes: the last axis varies fastest
// (Megatron order dp, pp, cp, tp puts tp ranks adjacent).
struct Mesh {
  std::vector<MeshAxis> axes;
  int64_t worldSize() const;
  std::vector<int64_t> coords(int64_t rank) const;
  int64_t rankOf(const std::vector<int64_t>& coords) const;
  const MeshAxis* axis(const std::string& name) const;
};

// A partition of (a subset of) the ranks into disjoint groups.
using GroupPartition = std::vector<std::vector<int64_t>>;

class Program {
 public:
  int64_t worldSize() const { return int64_t(ranks_.size()); }
  const Mesh& mesh() const { return mesh_; }
  const Graph& rank(int64_t r) const { return ranks_[size_t(r)]; }
  const std::vector<Graph>& ranks() const { return ranks_; }
  // Explicitly declared groups (mesh-axis groups are implicit).
  const std::map<std::string, GroupPartition>& namedGroups() const { return groups_; }
  // Members, in group order, of the group `name` that contains `rank`.
  Result<std::vector<int64_t>> groupOf(const std::string& name, int64_t rank) const;
  // The whole partition a group name stands for.
  Result<GroupPartition> partition(const std::string& name) const;

 private:
  friend class ProgramBuilder;
  Mesh mesh_;
  std::map<std::string, GroupPartition> groups_;
  std::vector<Graph> ranks_;
};

class ProgramBuilder {
 public:
  // An empty mesh means a single axis "world" of worldSize ranks.
  ProgramBuilder(int64_t worldSize, Mesh mesh);
  Status addGroup(const std::string& name, GroupPartition members);
  // Each rank's graph is finished here, so group sizes are known to shape
  // inference. Ranks may be added in any order; all must be present.
  Status setRank(int64_t rank, GraphBuilder graph);
  // Checks: every rank has a graph, every collective names a group that
  // exists and contains the rank, send/recv peers are valid ranks.
  Result<Program> finish() &&;

 private:
  Program prog_;
  int64_t worldSize_;
  std::vector<bool> have_;
  std::optional<Error> error_;
};

// Members, in group order, of the group `name` (a named partition, a mesh
// axis, or axes joined by '+') that contains `rank`.
Result<std::vector<int64_t>> groupMembers(const Mesh& mesh,
                                          const std::map<std::string, GroupPartition>& groups,
                                          const std::string& name, int64_t rank);

// Position of `rank` within its group `name` (members in group order),
// without listing the members where the group is made of mesh axes.
Result<int64_t> groupIndex(const Mesh& mesh, const std::map<std::string, GroupPartition>& groups,
                           const std::string& name, int64_t rank);

// Group size of `name` for `rank` in a program under construction.
GroupSizeFn groupSizeFor(const Mesh& mesh, const std::map<std::string, GroupPartition>& groups,
                         int64_t rank);

}  // namespace sp::ir

#pragma once
// Distributed programs: a world of ranks, a device mesh with named axes, named
// process groups and one graph per rank (MPMD). Collectives in rank graphs
// name a group: a mesh axis ("tp"), several axes joined by '+' ("dp+tp"), or
// a group declared explicitly by its member lists.
#include <map>
#include <memory>
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

// Ranks that run one body share one immutable Graph: a `rank a..b` body is
// built once (once per signature of group sizes its collectives see), so a
// 1024-rank SPMD program holds one graph, not 1024. The distinct graphs are
// the program's rank classes; everything per rank that depends only on the
// graph (types, collectives in order, outputs) is the same within a class.
class Program {
 public:
  int64_t worldSize() const { return int64_t(ranks_.size()); }
  const Mesh& mesh() const { return mesh_; }
  const Graph& rank(int64_t r) const { return *ranks_[size_t(r)]; }
  // Rank classes, numbered in order of their lowest rank.
  int64_t numClasses() const { return int64_t(classRanks_.size()); }
  int64_t classOf(int64_t r) const { return classOf_[size_t(r)]; }
  const std::vector<int64_t>& classRanks(int64_t c) const { return classRanks_[size_t(c)]; }
  const Graph& classGraph(int64_t c) const { return rank(classRanks_[size_t(c)][0]); }
  // Whether ranks a and b run the same graph object (then their graphs are
  // identical; different objects may still be equal).
  bool sameClass(int64_t a, int64_t b) const { return classOf_[size_t(a)] == classOf_[size_t(b)]; }
  // Explicitly declared groups (mesh-axis groups are implicit).
  const std::map<std::string, GroupPartition>& namedGroups() const { return groups_; }
  // Members, in group order, of the group `name` that contains `rank`.
  Result<std::vector<int64_t>> groupOf(const std::string& name, int64_t rank) const;
  // The world rank send/recv node `n` of `rank` exchanges with (peerRank).
  Result<int64_t> peerOf(int64_t rank, const Node& n) const;
  // The whole partition a group name stands for.
  Result<GroupPartition> partition(const std::string& name) const;

 private:
  friend class ProgramBuilder;
  Mesh mesh_;
  std::map<std::string, GroupPartition> groups_;
  std::vector<std::shared_ptr<const Graph>> ranks_;
  std::vector<int64_t> classOf_;
  std::vector<std::vector<int64_t>> classRanks_;
};

class ProgramBuilder {
 public:
  // An empty mesh means a single axis "world" of worldSize ranks.
  ProgramBuilder(int64_t worldSize, Mesh mesh);
  Status addGroup(const std::string& name, GroupPartition members);
  // Each rank's graph is finished here, so group sizes are known to shape
  // inference. Ranks may be added in any order; all must be present.
  Status setRank(int64_t rank, GraphBuilder graph);
  // One body for several ranks: built once for the first rank and shared
  // by every rank whose collectives see the same group sizes (built again
  // only for ranks where a size differs). Errors name the rank, as setRank.
  Status setRanks(const std::vector<int64_t>& ranks, GraphBuilder graph);
  // Checks: every rank has a graph, every collective names a group that
  // exists and contains the rank, send/recv peers are valid ranks.
  Result<Program> finish() &&;

 private:
  // Size of group `name` at `rank`, O(1) for mesh axes; named partitions
  // are indexed once per name.
  Result<int64_t> groupSize(const std::string& name, int64_t rank);

  Program prog_;
  int64_t worldSize_;
  std::vector<bool> have_;
  std::optional<Error> error_;
  std::map<std::string, std::vector<int64_t>> namedSizes_;  // name -> size per rank (0: not a member)
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

// Whether `name` is one or more mesh axes joined by '+' (not a named
// partition): such a group contains every rank, with one size.
bool isMeshAxisGroup(const Mesh& mesh, const std::map<std::string, GroupPartition>& groups, const std::string& name);

// The world rank that a send or recv node of `rank` exchanges with: its
// `peer` attribute, or, when the node names a `group`, the member at
// position `peer` of the rank's part of that group (a pipeline stage's
// neighbour in "pp", whatever the rank's dp and tp coordinates: one body
// serves every rank of a stage). `bad-peer` when the position is outside
// the group; group errors as for collectives.
Result<int64_t> peerRank(const Mesh& mesh, const std::map<std::string, GroupPartition>& groups, int64_t rank,
                         const Node& n);

// Group size of `name` for `rank` in a program under construction.
GroupSizeFn groupSizeFor(const Mesh& mesh, const std::map<std::string, GroupPartition>& groups,
                         int64_t rank);

}  // namespace sp::ir

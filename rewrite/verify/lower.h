#pragma once
// Lowering of the distributed program D to e-graph equations: every D value
// on rank r is a leaf dist(r, v); a node gives dist(r, out) = op(dist(r,
// in)...); collectives are matched across ranks by the module the
// interpreter's scheduler uses too (ir/collective_order.h: the k-th
// collective on the same member list, on each member, in one global order;
// send/recv FIFO per (src, dst, tag)) and become relation operators:
//   all_reduce sum -> sum over members (member order); avg -> scale(sum, 1/g);
//   max/min -> a chain of elementwise max/min; all_gather(dim) -> concat;
//   reduce_scatter(dim) -> slice of the sum, and the members' outputs
//   concatenated are the sum; all_to_all -> concats of slices; broadcast ->
//   the root's tensor; send/recv -> the sent tensor.
#include <map>
#include <set>
#include <string>
#include <vector>

#include "ir/collective_order.h"
#include "ir/program.h"
#include "rewrite/engine/engine.h"

namespace sp::rewrite {

struct CollInstance {
  ir::OpKind op = ir::OpKind::AllReduce;
  ir::AttrMap attrs;
  std::vector<int64_t> members;     // group order
  std::vector<ir::NodeId> nodes;    // per member
};

struct DistModel {
  const ir::Program* prog = nullptr;
  std::vector<CollInstance> colls;
  std::vector<ir::NodeIndex> collOf;                                    // per rank (sealed)
  std::vector<std::map<ir::NodeId, std::pair<int64_t, ir::NodeId>>> recvFrom;  // recv -> (src, send)
  std::vector<std::map<ir::NodeId, std::pair<int64_t, ir::NodeId>>> sendTo;    // send -> (dst, recv)
  // Equalities between D terms known from the input relations (two D
  // inputs holding the same S slice), indexed by every leaf they mention.
  std::map<DistLeaf, std::vector<std::pair<RelPtr, RelPtr>>> facts;
  // Source nodes (constant, range) by op and attributes: S constants are
  // related to identical D constants.
  std::vector<std::pair<int64_t, ir::NodeId>> sources;
  std::vector<std::set<ir::ValueId>> outputs;  // per rank: graph outputs
  // Per rank: values that hold only zeros (constants of zeros and what
  // zeroResult keeps zero: slice_backward's padding, say).
  std::vector<std::set<ir::ValueId>> zeros;
  int64_t numNodes = 0;
};

// Matches collectives with ir::orderCollectives; a D that can hang is a
// `deadlock` error naming the cycle of waiting ranks, mismatched ones are
// `collective-mismatch`, sends never received `unreceived-send`, a recv of
// another type than sent `mismatched-send-recv`.
Result<DistModel> lowerProgram(const ir::Program& p);

// Adds node `n` of rank `r` (for collectives: the whole instance) to the
// engine; returns the D values it defines.
std::vector<DistLeaf> addDistNode(Engine& e, const DistModel& m, int64_t r, ir::NodeId n);

// Adds the equations of every D node reachable forward from `seeds` within
// `hops` computing nodes (layout ops and collectives cost no hop), and the
// input facts of every leaf that appears. freeAtLimit: a tensor at the hop
// limit still passes layout ops and collectives. Returns whether the hop
// limit left some D node out (a deeper exploration would add more).
bool exploreDist(Engine& e, const DistModel& m, const std::vector<DistLeaf>& seeds, int hops,
                 bool freeAtLimit = false);

// Adds the producer of D value v of rank r when it is a constant.
void addConstantInput(Engine& e, const DistModel& m, int64_t r, ir::ValueId v);

// An S scalar float constant c related to a D one d of the same type: the
// class of scale(d, c/d) when the factor is exact (a loss scale 1/16 in S
// and 1/8 on each of 2 data-parallel ranks), else nullopt.
std::optional<ClassId> relateScalarConstant(Engine& e, const DistModel& m, const ir::Node& seqNode);

// Adds the facts of a leaf (and of the leaves those facts mention).
void addFacts(Engine& e, const DistModel& m, const DistLeaf& leaf, std::set<DistLeaf>& done);

}  // namespace sp::rewrite

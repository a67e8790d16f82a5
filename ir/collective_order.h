#pragma once
// The one global order of a distributed program's blocking communication:
// which nodes of which ranks form one collective, which send a recv gets,
// and whether the program can finish at all. The interpreter's scheduler
// (ir/scheduler.cpp) and the lowering of D to equations (rewrite/verify/lower.cpp)
// both take their matching from here, so a program that verify() reasons
// about is the program `run` executes.
//
// Semantics (NCCL-like, as the scheduler runs it): each rank executes its
// nodes in graph order; compute nodes and sends never block (sends are
// buffered, FIFO per (src, dst, tag)); a recv blocks until the matching
// send was posted; a group collective blocks until every member of its
// group (the member list, whatever the group's name) waits at a collective
// on the same member list, and then they run together. A state in which no
// rank can move and some rank has not finished is a deadlock (`deadlock`),
// reported with the cycle of ranks waiting for each other when there is one,
// every waiting op and its source location. Members that meet at different
// ops or attributes are `collective-mismatch`; a send never received is
// `unreceived-send`.
#include <map>
#include <string>
#include <vector>

#include "ir/program.h"

namespace sp::ir {

struct CollectiveStep {
  OpKind op = OpKind::AllReduce;
  std::string group;              // the group name on the first member
  std::vector<int64_t> members;   // group order
  std::vector<NodeId> nodes;      // per member
};

struct MessageStep {
  int64_t src = 0, dst = 0, tag = 0;
  NodeId send = -1, recv = -1;
};

// Per rank: node -> index, written while the order is built, then read. A
// sorted vector, not a map: a thousand collectives on each of 8,192 ranks
// are 8 million entries (48 bytes each in a map, 8 here). set() appends;
// seal() sorts, the last set of a node winning; the readers need it sealed.
class NodeIndex {
 public:
  void set(NodeId n, int i) { v_.emplace_back(n, i), sealed_ = false; }
  void seal();
  const int* find(NodeId n) const;  // nullptr: absent
  bool count(NodeId n) const { return find(n) != nullptr; }
  int at(NodeId n) const;           // asserts present
  size_t size() const { return v_.size(); }

 private:
  std::vector<std::pair<NodeId, int>> v_;
  bool sealed_ = true;
};

struct CollectiveOrder {
  std::vector<CollectiveStep> colls;   // in one global execution order
  std::vector<MessageStep> messages;   // in the order the recvs complete
  std::vector<NodeIndex> collOf;     // per rank: collective node -> colls index
  std::vector<NodeIndex> messageOf;  // per rank: send or recv node -> messages index
};

// Orders every collective, send and recv of `p`, or says why it cannot run
// to completion (`deadlock`, `collective-mismatch`, `unreceived-send`,
// group errors at the node that names the group).
Result<CollectiveOrder> orderCollectives(const Program& p);

// Whether the order is known without ordering: every rank runs one graph
// (one rank class), with no send or recv, and every collective names a
// group of mesh axes. Then every rank issues the same collectives in the
// same order, each collective node's instances are exactly the parts of its
// group's partition (all members at that node, with its attributes and
// types), and the program cannot hang: when every rank is at its k-th
// collective, all members of each group are, and all proceed. Constant in
// the number of ranks; where false, orderCollectives decides.
bool uniformSpmd(const Program& p);

// Where a blocked rank waits, for deadlock messages: "waits at <node> from
// rank P tag T" (a recv) or "waits at <node> in group NAME [members]".
// `peer`: a recv's world rank (Program::peerOf), -1: its peer attribute.
std::string waitingAt(const Node& n, const std::vector<int64_t>& members, int64_t peer = -1);
std::string groupStr(const std::string& name, const std::vector<int64_t>& members);

}  // namespace sp::ir

#pragma once
// A small e-graph in the style of egg: hash-consed e-nodes, union-find over
// e-classes, deferred congruence-closure rebuilds, top-down e-matching with
// integer-attribute variables, an e-class analysis slot (the tensor type of
// every member), explicit budgets with a stop reason, and cost-based
// extraction. The meaning of ENode::op is the client's (IR ops and relation
// operators for the verifier).
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "ir/tensor.h"

namespace sp::rewrite {

using ClassId = int32_t;

struct ENode {
  int32_t op = 0;
  std::vector<int64_t> data;   // integer attributes (dims, offsets, rank ids, ...)
  std::vector<ClassId> kids;
  bool operator==(const ENode& o) const { return op == o.op && data == o.data && kids == o.kids; }
};

struct ENodeHash {
  size_t operator()(const ENode& n) const;
};

// Patterns: a variable matches any class; a node pattern matches an e-node
// with the same op, the same number of children and data, where each datum
// is a literal or an integer variable (bound consistently across the match).
struct PatData {
  bool isVar = false;
  int64_t value = 0;  // literal, or variable index
};
struct EPattern {
  bool isVar = false;
  int var = -1;       // class variable index, if isVar
  int32_t op = 0;
  std::vector<PatData> data;
  std::vector<EPattern> kids;
};

struct Subst {
  std::vector<ClassId> classes;  // by class variable index (-1 unbound)
  std::vector<std::optional<int64_t>> ints;  // by int variable index
};

enum class StopReason { Saturated, IterationLimit, NodeLimit, TimeLimit, GoalReached };
std::string_view stopReasonName(StopReason r);  // "saturated", "iteration-limit", ..., "goal-reached"

struct Budget {
  int iterations = 30;
  size_t nodes = 200000;
  std::chrono::milliseconds time{2000};
  // The calling thread's count of search work (threadSearchWork) past
  // which the search stops too, as at the time limit; 0: none. A count of
  // work done, unlike wall or CPU time (hyperthreads sharing a core
  // stretch CPU time too), does not change with the machine's load, so
  // the same input stops at the same point everywhere.
  int64_t workUntil = 0;
  bool past(std::chrono::steady_clock::time_point deadline) const;
};

// The search work this thread has done, ever, in units: one per e-node
// added to any e-graph (hash-consed re-additions included: each is one
// rule result built) and one per rule matched at an e-class.
int64_t threadSearchWork();
void addSearchWork(int64_t units);

class EGraph {
 public:
  // Adds a node (children canonicalized); returns its class. The type is the
  // class analysis value: it must equal the type of the class it joins.
  ClassId add(ENode n, const ir::TensorType& type);
  // Looks a node up without adding it.
  std::optional<ClassId> lookup(ENode n) const;
  ClassId find(ClassId c) const;
  // Merges two classes; returns true if they were distinct. Asserts that
  // their types agree (merging tensors of different types is a checker bug).
  bool merge(ClassId a, ClassId b);
  // Restores congruence closure after merges.
  void rebuild();
  // Declares op commutative (for any arity: its children form a multiset):
  // the children of its nodes are kept sorted by canonical class, so nodes
  // that differ only in their order are one node (call before adding any).
  // Matchers of a binary pattern try both orders (matchAt does).
  void setCommutative(int32_t op) { commutative_.push_back(op); }
  bool isCommutative(int32_t op) const {
    return std::find(commutative_.begin(), commutative_.end(), op) != commutative_.end();
  }

  const ir::TensorType& type(ClassId c) const { return classes_.at(size_t(find(c))).type; }
  const std::vector<ENode>& nodes(ClassId c) const { return classes_.at(size_t(find(c))).nodes; }
  size_t numNodes() const { return memo_.size(); }
  size_t numClasses() const;
  std::vector<ClassId> canonicalClasses() const;

  // All matches of `p` (rooted anywhere), as (root class, substitution).
  std::vector<std::pair<ClassId, Subst>> match(const EPattern& p, int numClassVars,
                                               int numIntVars) const;
  // Matches of `p` rooted at class c.
  void matchAt(const EPattern& p, ClassId c, Subst s, std::vector<Subst>& out) const;
  // Instantiates a pattern under a substitution, adding nodes as needed.
  // typeOf computes the type of a new node from its children's types; it
  // returns nullopt when the instance is ill-typed (then nothing is added).
  using TypeFn = std::function<std::optional<ir::TensorType>(const ENode&, const EGraph&)>;
  std::optional<ClassId> instantiate(const EPattern& p, const Subst& s, const TypeFn& typeOf);

  // Cheapest term per class under `cost` (node cost given children costs;
  // return nullopt to forbid a node). Returns the chosen node per class.
  using CostFn = std::function<std::optional<double>(const ENode&, const std::vector<double>&)>;
  std::map<ClassId, std::pair<double, ENode>> extract(const CostFn& cost) const;

  // A canonical text of the whole e-graph (call after rebuild()): classes
  // in id order with their types, nodes, and kids as class positions; the
  // data of nodes with op `leafOp` is replaced by its position in
  // `leaves` (first occurrence order), which is filled. Two e-graphs with
  // equal texts are isomorphic under the leaf bijection position ->
  // position: what was derived in one holds, renamed, in the other
  // (layer memoization, verify.cpp). `roots` are appended as positions.
  std::string canonicalText(int32_t leafOp, const std::vector<ClassId>& roots,
                            std::vector<std::vector<int64_t>>& leaves) const;

 private:
  struct EClass {
    std::vector<ENode> nodes;
    std::vector<std::pair<ENode, ClassId>> parents;
    ir::TensorType type;
  };
  ENode canonicalize(ENode n) const;
  bool matchData(const std::vector<PatData>& pd, const std::vector<int64_t>& d, Subst& s) const;

  mutable std::vector<ClassId> parent_;  // union-find (path halving in find)
  std::vector<EClass> classes_;
  std::unordered_map<ENode, ClassId, ENodeHash> memo_;
  std::vector<int32_t> commutative_;
  std::vector<ClassId> pending_;
};

}  // namespace sp::rewrite

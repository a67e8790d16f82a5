// Associativity of the n-ary relation operators (relation semantics,
// docs/relations.md: sum over ranks and concat along one dim are n-ary, so
// sum(sum(a, b), c), sum(a, sum(b, c)) and sum(a, b, c) denote one value,
// and likewise for concats along the same dim). Lemmas and lowering build
// binary chains in whatever nesting their sides have (a matmul split over
// four ranks gives a right-nested sum, lowering a reduce_scatter a
// left-nested one); this pass adds, to every class holding a nested chain,
// the flat n-ary node of its operands in order, so chains of equal operand
// lists meet in one class by hash-consing, whatever their nesting or group
// size. No reordering (commutativity stays a lemma), and the number of
// flattenings kept per class is bounded, so the pass is linear in the
// e-graph.
#include <map>
#include <set>
#include <vector>

#include "rewrite/engine.h"

namespace sp::rewrite {

namespace {

constexpr size_t kMaxFlattenings = 4;  // per class and operator
constexpr size_t kMaxOperands = 4096;

struct Flattener {
  const EGraph& g;
  int32_t op;
  int64_t dim;  // concat only
  std::map<ClassId, std::vector<std::vector<ClassId>>> memo;
  std::set<ClassId> visiting;

  bool isChain(const ENode& n) const { return n.op == op && (op != kOpConcat || n.data[0] == dim); }

  // Operand lists of class c through its chain nodes of `op` (c itself when
  // it has none, or on a cycle).
  const std::vector<std::vector<ClassId>>& of(ClassId c) {
    c = g.find(c);
    if (auto it = memo.find(c); it != memo.end()) return it->second;
    std::vector<std::vector<ClassId>> out;
    if (visiting.insert(c).second) {
      for (const ENode& n : g.nodes(c)) {
        if (!isChain(n)) continue;
        std::vector<std::vector<ClassId>> acc{{}};
        for (ClassId k : n.kids) {
          const auto kidLists = of(k);  // copy: `memo` may rehash below
          std::vector<std::vector<ClassId>> next;
          for (const auto& a : acc)
            for (const auto& b : kidLists) {
              if (next.size() >= kMaxFlattenings || a.size() + b.size() > kMaxOperands) break;
              auto ab = a;
              ab.insert(ab.end(), b.begin(), b.end());
              next.push_back(std::move(ab));
            }
          acc = std::move(next);
        }
        for (auto& a : acc)
          if (out.size() < kMaxFlattenings && std::find(out.begin(), out.end(), a) == out.end()) out.push_back(std::move(a));
      }
      visiting.erase(c);
    }
    if (out.empty()) out.push_back({c});
    return memo[c] = std::move(out);
  }
};

}  // namespace

int Engine::flattenAssoc() {
  struct Todo {
    ClassId cls;
    int32_t op;
    int64_t dim;
  };
  std::vector<Todo> todo;
  for (ClassId c : g_.canonicalClasses())
    for (const ENode& n : g_.nodes(c))
      if (n.op == kOpSum || n.op == kOpConcat) {
        bool nested = false;
        for (ClassId k : n.kids)
          for (const ENode& m : g_.nodes(k))
            nested = nested || (m.op == n.op && (n.op == kOpSum || m.data[0] == n.data[0]));
        if (nested) todo.push_back({c, n.op, n.op == kOpConcat ? n.data[0] : 0});
      }
  // Collect first (the flatteners read the e-graph), then add and merge.
  std::map<std::pair<int32_t, int64_t>, Flattener> flat;
  std::vector<std::pair<Todo, std::vector<ClassId>>> adds;
  for (const Todo& t : todo) {
    auto it = flat.try_emplace({t.op, t.dim}, Flattener{g_, t.op, t.dim, {}, {}}).first;
    for (const auto& parts : it->second.of(t.cls))
      if (parts.size() > 2) adds.emplace_back(t, parts);
  }
  int changed = 0;
  for (const auto& [t, parts] : adds) {
    size_t before = g_.numNodes();
    auto n = relNode(t.op, t.op == kOpConcat ? std::vector<int64_t>{t.dim} : std::vector<int64_t>{}, parts);
    if (!n) continue;
    bool merged = g_.find(*n) != g_.find(t.cls) && mergeChecked(t.cls, *n);
    if (merged || g_.numNodes() != before) ++changed;
  }
  if (changed) g_.rebuild();
  return changed;
}

}  // namespace sp::rewrite

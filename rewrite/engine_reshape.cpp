// Row-major reshape composition (relation semantics, the definition of a
// row-major reshape, like slice tiling): reshape(reshape(x, s1), s2) is
// reshape(x, s2), and every reshape is invertible, x = reshape(reshape(x, s),
// shape(x)). With both, a split of a merged dim meets the tensor it came
// from (Megatron's [s, b, h] -> [s*b, h] -> matmul -> [s, b, h'], and the
// [b*np, s, d] <-> [b, np, s, d] views of attention), so lemmas need only be
// written in one direction.
#include "rewrite/engine.h"

namespace sp::rewrite {

int Engine::composeReshapes() {
  struct Edge {
    ClassId out, in;
  };
  std::vector<Edge> edges;
  for (ClassId c : g_.canonicalClasses())
    for (const ENode& n : g_.nodes(c))
      if (n.op == kOpReshape && n.kids.size() == 1) edges.push_back({c, g_.find(n.kids[0])});
  std::map<ClassId, std::vector<ClassId>> producersOf;  // class -> classes it is a reshape of
  for (const auto& e : edges) producersOf[e.out].push_back(e.in);
  int changed = 0;
  auto unite = [&](ClassId target, std::optional<ClassId> c) {
    if (!c) return;
    size_t before = g_.numNodes();
    bool merged = g_.find(*c) != g_.find(target) && mergeChecked(target, *c);
    if (merged || g_.numNodes() != before) ++changed;
  };
  for (const auto& e : edges) {
    unite(e.in, reshape(e.out, g_.type(e.in).shape));  // inverse
    auto it = producersOf.find(e.in);
    if (it == producersOf.end()) continue;
    for (ClassId x : it->second) unite(e.out, reshape(x, g_.type(e.out).shape));  // composition
  }
  if (changed) g_.rebuild();
  return changed;
}

}  // namespace sp::rewrite

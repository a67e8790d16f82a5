// Permute through concat (relation semantics, like slice tiling): a permute
// only renames dims, so permute(concat(a, b, dim=d), p) is
// concat(permute(a, p), permute(b, p), dim=i) where p[i] == d, for any rank
// and any permutation. The proven lemmas of layout.rules and heads.rules
// state the same law for the few (rank, perm) pairs the sbh attention uses;
// this is the general form, so [s, h] layouts (per-head [n, s, d] views)
// need no lemma per perm.
#include "rewrite/engine/engine.h"

namespace sp::rewrite {

int Engine::permutesThroughConcats() {
  struct Push {
    ClassId out, a, b;
    std::vector<int64_t> perm;
    int64_t dim;  // concat dim after the permute
  };
  std::vector<Push> pushes;
  for (ClassId c : g_.canonicalClasses())
    for (const ENode& outer : g_.nodes(c)) {
      if (outer.op != kOpPermute) continue;
      for (const ENode& inner : g_.nodes(outer.kids[0])) {
        if (inner.op != kOpConcat) continue;
        for (size_t i = 0; i < outer.data.size(); ++i)
          if (outer.data[i] == inner.data[0])
            pushes.push_back({c, inner.kids[0], inner.kids[1], outer.data, int64_t(i)});
      }
    }
  int changed = 0;
  for (const auto& p : pushes) {
    size_t before = g_.numNodes();
    auto a = permute(p.a, p.perm);
    auto b = a ? permute(p.b, p.perm) : std::nullopt;
    auto cat = b ? concat(p.dim, {*a, *b}) : std::nullopt;
    bool merged = cat && g_.find(*cat) != g_.find(p.out) && mergeChecked(p.out, *cat);
    if (merged || g_.numNodes() != before) ++changed;
  }
  return changed;
}

}  // namespace sp::rewrite

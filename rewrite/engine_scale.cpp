// Scale composition (relation semantics, like slice tiling): scale(scale(x,
// f), g) is scale(x, f*g). Only when the product is exact in double, so the
// factor stored is the real product (the proofs' real arithmetic): a loss
// scale 1/8 on each rank averaged over 2 data-parallel ranks meets S's 1/16.
#include <bit>
#include <cmath>

#include "rewrite/engine.h"

namespace sp::rewrite {

int Engine::composeScales() {
  struct Chain {
    ClassId out, x;
    double factor;
  };
  std::vector<Chain> chains;
  for (ClassId c : g_.canonicalClasses())
    for (const ENode& outer : g_.nodes(c)) {
      if (outer.op != kOpScale) continue;
      double g = std::bit_cast<double>(outer.data[0]);
      for (const ENode& inner : g_.nodes(outer.kids[0])) {
        if (inner.op != kOpScale) continue;
        double f = std::bit_cast<double>(inner.data[0]);
        double p = f * g;
        if (std::isfinite(p) && std::fma(f, g, -p) == 0.0) chains.push_back({c, inner.kids[0], p});
      }
    }
  int changed = 0;
  for (const auto& ch : chains) {
    size_t before = g_.numNodes();
    auto s = scale(ch.x, ch.factor);
    bool merged = s && g_.find(*s) != g_.find(ch.out) && mergeChecked(ch.out, *s);
    if (merged || g_.numNodes() != before) ++changed;
  }
  return changed;
}

}  // namespace sp::rewrite

// Row-major reshape composition (relation semantics, the definition of a
// row-major reshape, like slice tiling): reshape(reshape(x, s1), s2) is
// reshape(x, s2), and every reshape is invertible, x = reshape(reshape(x, s),
// shape(x)). With both, a split of a merged dim meets the tensor it came
// from (Megatron's [s, b, h] -> [s*b, h] -> matmul -> [s, b, h'], and the
// [b*np, s, d] <-> [b, np, s, d] views of attention), so lemmas need only be
// written in one direction. A reshape that merges three or more adjacent
// dims at once (a [s, b, 1] statistic flattened to [s*b]) is also factored
// into a first merge of two dims and the rest, so lemmas about one merge
// (merge_dims) reach it step by step.
#include "rewrite/engine/engine.h"

namespace sp::rewrite {

namespace {

// `in` with the first two dims of its first differing run merged, when
// `out` has at least two fewer dims than `in`, the same dims before that
// run, and the run's first two dims multiply to no more than out's dim
// there: the first step of a multi-dim merge.
std::optional<ir::Shape> firstMergeStep(const ir::Shape& in, const ir::Shape& out) {
  if (in.size() < out.size() + 2) return std::nullopt;
  for (const auto& d : in)
    if (!d.isConcrete()) return std::nullopt;
  size_t d = 0;
  while (d < out.size() && in[d] == out[d]) ++d;
  if (d >= out.size() || !out[d].isConcrete()) return std::nullopt;
  int64_t two = in[d].value() * in[d + 1].value();
  if (two == 0 || out[d].value() % two != 0) return std::nullopt;
  ir::Shape step = in;
  step[d] = ir::Dim(two);
  step.erase(step.begin() + int64_t(d) + 1);
  return step;
}

}  // namespace

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
    if (auto step = firstMergeStep(g_.type(e.in).shape, g_.type(e.out).shape))
      if (auto first = reshape(e.in, *step)) unite(e.out, reshape(*first, g_.type(e.out).shape));
    auto it = producersOf.find(e.in);
    if (it == producersOf.end()) continue;
    for (ClassId x : it->second) unite(e.out, reshape(x, g_.type(e.out).shape));  // composition
  }
  if (changed) g_.rebuild();
  return changed;
}

}  // namespace sp::rewrite

// Scale composition (relation semantics, like slice tiling): scale(scale(x,
// f), g) is scale(x, f*g). Only when the product is exact in double, so the
// factor stored is the real product (the proofs' real arithmetic): a loss
// scale 1/8 on each rank averaged over 2 data-parallel ranks meets S's 1/16.
#include <bit>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "rewrite/engine/engine.h"

namespace sp::rewrite {

bool exactProduct(double f, double g) {
  double p = f * g;
  return std::isfinite(p) && std::fma(f, g, -p) == 0.0;
}

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
        if (exactProduct(f, g)) chains.push_back({c, inner.kids[0], f * g});
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

// Linearity of sum and scale (relation semantics, real arithmetic like the
// collective sums): a sum whose operands are scaled sums is a linear
// combination of the operands below them, and when every one of those
// atoms has the same coefficient c the class is scale(sum(atoms), c). Any
// nesting of halving lemmas (mean over a concat of 2^k data-parallel
// shards, split one half at a time) then meets the flat form an all_reduce
// 'avg' gives, whatever the group size. Coefficients are multiplied only
// where the product is exact in double, and an atom met twice makes the
// combination uneven (no node), so the factor stored is the real one.
namespace {

constexpr size_t kMaxLinearAtoms = 4096;

struct Linear {
  const EGraph& g;
  std::map<ClassId, std::optional<std::map<ClassId, double>>> memo;
  std::set<ClassId> visiting;

  // The class's expansion through its first sum node, else its first scale
  // node over an expandable class; nullopt: an atom (or too large, or a
  // coefficient product that is not exact).
  std::optional<std::map<ClassId, double>> expand(ClassId c) {
    c = g.find(c);
    if (auto it = memo.find(c); it != memo.end()) return it->second;
    std::optional<std::map<ClassId, double>> out;
    if (visiting.insert(c).second) {
      for (const ENode& n : g.nodes(c)) {
        if (n.op == kOpSum) {
          out = combine(n.kids, 1.0);
          break;
        }
      }
      if (!out)
        for (const ENode& n : g.nodes(c))
          if (n.op == kOpScale && expand(n.kids[0]) && (out = combine(n.kids, std::bit_cast<double>(n.data[0])))) break;
      visiting.erase(c);
    }
    return memo[c] = out;
  }

  // Σ factor·(expansion of k, or k itself) over the kids.
  std::optional<std::map<ClassId, double>> combine(const std::vector<ClassId>& kids, double factor) {
    std::map<ClassId, double> acc;
    for (ClassId k : kids) {
      auto e = expand(k);
      std::map<ClassId, double> one{{g.find(k), 1.0}};
      for (auto& [a, w] : e ? *e : one) {
        if (!exactProduct(w, factor)) return std::nullopt;
        double add = w * factor;
        auto [it, fresh] = acc.emplace(a, add);
        if (!fresh) {
          double s = it->second + add;
          if (s - it->second != add) return std::nullopt;
          it->second = s;
        }
      }
      if (acc.size() > kMaxLinearAtoms) return std::nullopt;
    }
    return acc;
  }
};

}  // namespace

int Engine::flattenLinear() {
  Linear lin{g_, {}, {}};
  struct Add {
    ClassId cls;
    std::vector<ClassId> atoms;
    double factor;
  };
  std::vector<Add> adds;
  for (ClassId c : g_.canonicalClasses())
    for (const ENode& n : g_.nodes(c)) {
      if (n.op != kOpSum) continue;
      // Only sums with a scaled operand: plain nesting is flattenAssoc's.
      bool scaled = false;
      for (ClassId k : n.kids)
        for (const ENode& m : g_.nodes(k)) scaled = scaled || (m.op == kOpScale && lin.expand(m.kids[0]));
      if (!scaled) continue;
      auto form = lin.combine(n.kids, 1.0);
      if (!form || form->size() < 2) break;
      double w = form->begin()->second;
      bool even = true;
      for (auto& [a, v] : *form) even = even && v == w;
      if (!even) break;
      std::vector<ClassId> atoms;
      for (auto& [a, v] : *form) atoms.push_back(a);
      adds.push_back({c, std::move(atoms), w});
      break;
    }
  int changed = 0;
  for (auto& a : adds) {
    size_t before = g_.numNodes();
    auto s = sum(a.atoms);
    if (s && a.factor != 1.0) s = scale(*s, a.factor);
    bool merged = s && g_.find(*s) != g_.find(a.cls) && mergeChecked(a.cls, *s);
    if (merged || g_.numNodes() != before) ++changed;
  }
  return changed;
}

}  // namespace sp::rewrite

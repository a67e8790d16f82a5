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
#include <functional>
#include <map>
#include <set>
#include <tuple>
#include <vector>

#include "rewrite/engine/engine.h"

namespace sp::rewrite {

namespace {

constexpr size_t kMaxFlattenings = 4;  // per class and operator
constexpr size_t kMaxOperands = 4096;
constexpr size_t kChainViews = 32;

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
  // A prefix or suffix made below for a longer chain is not a root: its
  // own views would be the infixes, O(n^2) classes per chain.
  auto isView = [&](ClassId c) {
    auto it = std::lower_bound(viewClasses_.begin(), viewClasses_.end(), c);
    return it != viewClasses_.end() && *it == c;
  };
  for (auto& v : viewClasses_) v = g_.find(v);
  std::sort(viewClasses_.begin(), viewClasses_.end());
  // A class that is an operand of another chain node of the same operator
  // (the image of a balanced half under a lemma, inside the image of the
  // whole) is flattened as part of that chain, not as a root of its own:
  // its own flat node would repeat O(n) operands at every level of the
  // bracketing, O(n log n) per chain and iteration (TP 512: gigabytes).
  using ChainOf = std::tuple<ClassId, int32_t, int64_t>;  // class, operator, concat dim
  std::vector<ChainOf> nestedRoots, inner;
  for (ClassId c : g_.canonicalClasses())
    for (const ENode& n : g_.nodes(c)) {
      if (n.op != kOpSum && n.op != kOpConcat) continue;
      const int64_t dim = n.op == kOpConcat ? n.data[0] : 0;
      bool nested = false;
      for (ClassId k : n.kids) {
        inner.emplace_back(g_.find(k), n.op, dim);
        for (const ENode& m : g_.nodes(k))
          nested = nested || (m.op == n.op && (n.op == kOpSum || m.data[0] == n.data[0]));
      }
      if (nested && !isView(c)) nestedRoots.emplace_back(c, n.op, dim);
    }
  std::sort(inner.begin(), inner.end());
  for (const auto& [c, op, dim] : nestedRoots)
    if (!std::binary_search(inner.begin(), inner.end(), ChainOf{c, op, dim})) todo.push_back({c, op, dim});
  // Collect first (the flatteners read the e-graph), then add and merge.
  std::map<std::pair<int32_t, int64_t>, Flattener> flat;
  std::vector<std::pair<Todo, std::vector<ClassId>>> adds;
  for (const Todo& t : todo) {
    auto it = flat.try_emplace({t.op, t.dim}, Flattener{g_, t.op, t.dim, {}, {}}).first;
    for (const auto& parts : it->second.of(t.cls))
      if (parts.size() > 2) adds.emplace_back(t, parts);
  }
  int changed = 0;
  auto same = [&](ClassId a, std::optional<ClassId> b) {
    size_t before = g_.numNodes();
    if (!b) return false;
    bool merged = g_.find(*b) != g_.find(a) && mergeChecked(a, *b);
    if (merged || g_.numNodes() != before) ++changed;
    return true;
  };
  for (auto& [t, parts] : adds)
    if (t.op == kOpSum) {  // a multiset: its views follow the stored (sorted) order
      for (auto& k : parts) k = g_.find(k);
      std::sort(parts.begin(), parts.end());
    }
  // A chain that is a prefix or suffix of a longer one in this pass (a
  // lemma mapped the longer chain's views part by part) is not a root
  // either: the longer chain's views already cover it.
  // Keyed by polynomial hashes (two bases) of the operand list, built
  // incrementally over prefixes and suffixes: O(n) per chain, where the
  // lists themselves made it O(n^2) space and O(n^3) time (half the time of
  // a TP 192 MLP went there). A collision can only mark a chain covered
  // that is not, so its views are not added: a missed bracketing
  // (incompleteness), never an unsound merge.
  // A prefix is keyed by its hash pushed front to back, a suffix by its
  // hash pushed back to front (`reversed`), so both grow by one push per
  // length; a chain is looked up both ways.
  struct ChainHash {
    uint64_t h1 = 0, h2 = 0;
    void push(ClassId c) {
      h1 = h1 * 1000003 + uint64_t(uint32_t(c)) + 1;
      h2 = h2 * 0x9E3779B97F4A7C15ull + uint64_t(uint32_t(c)) + 1;
    }
  };
  using ChainKey = std::tuple<int32_t, int64_t, size_t, bool, uint64_t, uint64_t>;  // op, dim, length, reversed
  std::vector<ChainKey> covered;  // sorted once, then searched
  for (const auto& [t, parts] : adds) {
    ChainHash pre, suf;
    for (size_t len = 1; len < parts.size(); ++len) {
      pre.push(parts[len - 1]);
      suf.push(parts[parts.size() - len]);
      if (len < 2) continue;
      covered.emplace_back(t.op, t.dim, len, false, pre.h1, pre.h2);
      covered.emplace_back(t.op, t.dim, len, true, suf.h1, suf.h2);
    }
  }
  std::sort(covered.begin(), covered.end());
  covered.erase(std::unique(covered.begin(), covered.end()), covered.end());
  auto isCovered = [&](const Todo& t, const std::vector<ClassId>& parts) {
    ChainHash fwd, rev;
    for (size_t i = 0; i < parts.size(); ++i) {
      fwd.push(parts[i]);
      rev.push(parts[parts.size() - 1 - i]);
    }
    return std::binary_search(covered.begin(), covered.end(), ChainKey{t.op, t.dim, parts.size(), false, fwd.h1, fwd.h2}) ||
           std::binary_search(covered.begin(), covered.end(), ChainKey{t.op, t.dim, parts.size(), true, rev.h1, rev.h2});
  };
  for (const auto& add : adds) {
    if (overBudget_ && overBudget_()) break;
    // Named references, not structured bindings: lambdas below capture
    // them (clang 14 rejects captured bindings; the fuzz and sanitizer
    // builds use it).
    const auto& t = add.first;
    const auto& parts = add.second;
    const std::vector<int64_t> data = t.op == kOpConcat ? std::vector<int64_t>{t.dim} : std::vector<int64_t>{};
    if (!same(t.cls, relNode(t.op, data, parts)) || isCovered(t, parts)) continue;
    // Binary views of the chain through flat sub-chains: a binary lemma
    // (concat(?a, ?b) paired with another split at the same point) needs
    // some bracketing, and applying associativity both ways would make
    // the Catalan number of them. Chains up to kChainViews parts get their
    // left- and right-nested views (every split point, O(n) classes);
    // longer ones the balanced bracketing (halves, O(n) classes, depth
    // log n, so a lemma reaches the parts in log n iterations).
    auto view = [&](ClassId c) { viewClasses_.push_back(g_.find(c)); };
    std::function<std::optional<ClassId>(size_t, size_t)> halves = [&](size_t lo, size_t hi) -> std::optional<ClassId> {
      if (hi - lo == 1) return parts[lo];
      auto whole = relNode(t.op, data, std::vector<ClassId>(parts.begin() + long(lo), parts.begin() + long(hi)));
      if (!whole || hi - lo == 2) return whole;
      size_t mid = lo + (hi - lo) / 2;
      auto l = halves(lo, mid), r = halves(mid, hi);
      if (l && r) same(*whole, relNode(t.op, data, {*l, *r}));
      view(*whole);
      return whole;
    };
    {
      size_t mid = parts.size() / 2;
      auto l = halves(0, mid), r = halves(mid, parts.size());
      if (l && r) same(t.cls, relNode(t.op, data, {*l, *r}));
    }
    if (parts.size() > kChainViews) continue;
    std::optional<ClassId> prefix = parts[0], suffix = parts.back();
    for (size_t i = 1; i < parts.size() && prefix && suffix; ++i) {
      std::vector<ClassId> pre(parts.begin(), parts.begin() + long(i) + 1);
      std::vector<ClassId> suf(parts.end() - long(i) - 1, parts.end());
      auto p = relNode(t.op, data, pre), s = relNode(t.op, data, suf);
      if (!p || !s) break;
      same(*p, relNode(t.op, data, {*prefix, pre.back()}));
      same(*s, relNode(t.op, data, {suf.front(), *suffix}));
      if (i + 1 < parts.size()) {
        view(*p);
        view(*s);
      }
      prefix = p;
      suffix = s;
    }
  }
  if (changed) g_.rebuild();
  return changed;
}

}  // namespace sp::rewrite

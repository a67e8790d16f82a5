// Reshape through concat (relation semantics, the definition of a
// row-major reshape, like permutesThroughConcats): a reshape that maps the
// dims before the concat dim d among themselves, keeps d, merges it with
// the dims right after it, or splits it (every part's extent a multiple of
// the split-off size), and maps the dims after that among themselves, acts
// on each part alone:
//   reshape(concat(x_1..x_n, dim=d), O) = concat(reshape(x_i, O_i), dim=d')
// where d' is the dim of O holding d and O_i is O with O[d'] scaled to
// part i. The element (p, j, s) of the concat goes to (f(p), g(j), h(s))
// with f and h bijections of the prefix and suffix index spaces and g
// monotone and block-aligned, so each part's block goes to the matching
// block of the result. Unsqueeze and squeeze of unit dims, head split and
// merge [.., H*D] <-> [.., H, D] and GQA's repeat_kv (an expand, which is a
// concat of copies, then a merge of the copy dim into the head dim) are all
// instances, at any rank, dim and group size. The reshape of a sum is the
// sum of the reshapes (a reshape is linear), and a scale of a concat the
// concat of the scaled parts, along any dim.
//
// Concats along two dims commute (concatsThroughConcats): a concat along e
// of m tensors that are each a concat along d != e of n parts with the same
// extents along d is the concat along d of the n concats along e of the
// i-th parts (both index the same blocks of one tensor).
#include <bit>
#include <numeric>
#include <set>

#include "rewrite/engine/engine.h"

namespace sp::rewrite {

namespace {

int64_t prod(const ir::Shape& s, size_t lo, size_t hi) {
  int64_t p = 1;
  for (size_t i = lo; i < hi; ++i) p *= s[i].value();
  return p;
}

// The shape of each part's reshape, for a concat along d of parts with
// extents `ext` along d, reshaped from `in` to `out`; nullopt when the
// reshape mixes the concat dim with the dims before it or splits a part.
std::optional<std::pair<int64_t, std::vector<ir::Shape>>> partShapes(const ir::Shape& in, int64_t d,
                                                                      const ir::Shape& out,
                                                                      const std::vector<int64_t>& ext) {
  if (!ir::isConcrete(in) || !ir::isConcrete(out)) return std::nullopt;
  size_t du = size_t(d);
  const int64_t pre = prod(in, 0, du), whole = in[du].value();
  for (size_t dp = 0; dp < out.size(); ++dp) {
    if (prod(out, 0, dp) != pre) continue;
    // Merge: out[dp] = in[d] * in[d+1..d+j) (j >= 1; j = 1 keeps d).
    for (size_t j = 1; du + j <= in.size(); ++j) {
      int64_t t = prod(in, du + 1, du + j);
      if (out[dp].value() != whole * t || prod(out, dp + 1, out.size()) != prod(in, du + j, in.size())) continue;
      std::vector<ir::Shape> shapes;
      for (int64_t e : ext) {
        ir::Shape s = out;
        s[dp] = ir::Dim(e * t);
        shapes.push_back(s);
      }
      return std::make_pair(int64_t(dp), shapes);
    }
    // Split: in[d] = out[dp] * out[dp+1..dp+j) (j >= 2), each part a
    // multiple of the split-off size.
    for (size_t j = 2; dp + j <= out.size(); ++j) {
      int64_t t = prod(out, dp + 1, dp + j);
      if (t == 0 || out[dp].value() * t != whole || prod(out, dp + j, out.size()) != prod(in, du + 1, in.size()))
        continue;
      std::vector<ir::Shape> shapes;
      for (int64_t e : ext) {
        if (e % t != 0) break;  // a part would be split: not this reading
        ir::Shape s = out;
        s[dp] = ir::Dim(e / t);
        shapes.push_back(s);
      }
      if (shapes.size() == ext.size()) return std::make_pair(int64_t(dp), shapes);
    }
  }
  return std::nullopt;
}

}  // namespace

int Engine::reshapesThroughConcats() {
  struct Push {
    ClassId out;
    ENode outer;  // the reshape or scale
    ENode inner;  // the widest concat (or sum) of its operand's class
  };
  std::vector<Push> pushes;
  for (ClassId c : g_.canonicalClasses())
    for (const ENode& outer : g_.nodes(c)) {
      if ((outer.op != kOpReshape && outer.op != kOpScale) || outer.kids.size() != 1) continue;
      const ENode* widest[2] = {nullptr, nullptr};  // concat, sum
      for (const ENode& inner : g_.nodes(outer.kids[0])) {
        int k = inner.op == kOpConcat ? 0 : inner.op == kOpSum ? 1 : -1;
        if (k >= 0 && (!widest[k] || inner.kids.size() > widest[k]->kids.size())) widest[k] = &inner;
      }
      for (const ENode* w : widest)
        if (w && (outer.op == kOpReshape || w->op == kOpConcat)) pushes.push_back({c, outer, *w});
    }
  int changed = 0;
  for (const auto& p : pushes) {
    const ir::Shape out = g_.type(p.out).shape;
    std::vector<ClassId> parts;
    std::optional<ClassId> eq;
    if (p.outer.op == kOpScale) {  // scale(concat(x_i)) = concat(scale(x_i)), any dim
      for (ClassId k : p.inner.kids)
        if (auto r = scale(k, std::bit_cast<double>(p.outer.data[0]))) parts.push_back(*r);
      if (parts.size() == p.inner.kids.size()) eq = concat(p.inner.data[0], parts);
    } else if (p.inner.op == kOpSum) {
      for (ClassId k : p.inner.kids)
        if (auto r = reshape(k, out)) parts.push_back(*r);
      if (parts.size() == p.inner.kids.size()) eq = sum(parts);
    } else {
      int64_t d = p.inner.data[0];
      std::vector<int64_t> ext;
      for (ClassId k : p.inner.kids) {
        const ir::Dim& e = g_.type(k).shape.at(size_t(d));
        if (!e.isConcrete()) break;
        ext.push_back(e.value());
      }
      if (ext.size() != p.inner.kids.size()) continue;
      // The class's type, not the node's kids': they agree (it is typed).
      ir::Shape in = g_.type(p.inner.kids[0]).shape;
      in[size_t(d)] = ir::Dim(std::accumulate(ext.begin(), ext.end(), int64_t(0)));
      auto shapes = partShapes(in, d, out, ext);
      if (!shapes) continue;
      for (size_t i = 0; i < p.inner.kids.size(); ++i)
        if (auto r = reshape(p.inner.kids[i], shapes->second[i])) parts.push_back(*r);
      if (parts.size() == p.inner.kids.size()) eq = concat(shapes->first, parts);
    }
    size_t before = g_.numNodes();
    bool merged = eq && g_.find(*eq) != g_.find(p.out) && mergeChecked(p.out, *eq);
    if (merged || g_.numNodes() != before) ++changed;
  }
  if (changed) g_.rebuild();
  return changed;
}

const ENode* Engine::widestConcat(ClassId c, int64_t dim) const {
  const ENode* w = nullptr;
  for (const ENode& n : g_.nodes(c))
    if (n.op == kOpConcat && n.data[0] == dim && (!w || n.kids.size() > w->kids.size())) w = &n;
  return w;
}

int Engine::concatsThroughConcats() {
  auto widest = [&](ClassId c, int64_t dim) { return widestConcat(c, dim); };
  struct Swap {
    ClassId out;
    int64_t d, e;
    std::vector<std::vector<ClassId>> grid;  // [j][i]: part i of operand j
  };
  std::vector<Swap> swaps;
  for (ClassId c : g_.canonicalClasses()) {
    std::set<int64_t> outerDims;
    for (const ENode& n : g_.nodes(c))
      if (n.op == kOpConcat) outerDims.insert(n.data[0]);
    for (int64_t e : outerDims) {
      const ENode* outer = widest(c, e);
      std::set<int64_t> innerDims;
      for (const ENode& n : g_.nodes(outer->kids[0]))
        if (n.op == kOpConcat && n.data[0] != e) innerDims.insert(n.data[0]);
      for (int64_t d : innerDims) {
        Swap s{c, d, e, {}};
        std::vector<ir::Dim> ext;
        for (ClassId x : outer->kids) {
          const ENode* inner = widest(x, d);
          if (!inner) break;
          std::vector<ir::Dim> xe;
          for (ClassId k : inner->kids) xe.push_back(g_.type(k).shape.at(size_t(d)));
          if (!s.grid.empty() && xe != ext) break;
          ext = xe;
          s.grid.push_back(inner->kids);
        }
        if (s.grid.size() == outer->kids.size()) swaps.push_back(std::move(s));
      }
    }
  }
  int changed = 0;
  for (const auto& s : swaps) {
    std::vector<ClassId> cols;
    for (size_t i = 0; i < s.grid[0].size(); ++i) {
      std::vector<ClassId> col;
      for (const auto& row : s.grid) col.push_back(row[i]);
      if (auto k = concat(s.e, col)) cols.push_back(*k);
    }
    if (cols.size() != s.grid[0].size()) continue;
    size_t before = g_.numNodes();
    auto eq = concat(s.d, cols);
    bool merged = eq && g_.find(*eq) != g_.find(s.out) && mergeChecked(s.out, *eq);
    if (merged || g_.numNodes() != before) ++changed;
  }
  if (changed) g_.rebuild();
  return changed;
}

}  // namespace sp::rewrite

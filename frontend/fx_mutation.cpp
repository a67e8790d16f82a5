#include "frontend/fx_mutation.h"

#include <algorithm>
#include <cstdint>

namespace sp::frontend::fx {

namespace {

// The names statement `at` reads: its Name expressions and the receivers
// of its method calls and attributes (`v` of `v.mul(2)`, whose callee is
// "v.mul").
void reads(const Expr& x, size_t at, std::map<std::string, std::vector<size_t>>& r) {
  auto read = [&](const std::string& name) {
    auto& v = r[name];
    if (v.empty() || v.back() != at) v.push_back(at);
  };
  if (x.kind == Expr::Kind::Name) read(x.s);
  if ((x.kind == Expr::Kind::Call || x.kind == Expr::Kind::Dotted) && x.s.find('.') != std::string::npos)
    read(x.s.substr(0, x.s.find('.')));
  for (const auto& i : x.items) reads(i, at, r);
  for (const auto& [k, v] : x.kwargs) reads(v, at, r);
}

bool sameExpr(const Expr& a, const Expr& b) {
  if (a.kind != b.kind || a.b != b.b || a.i != b.i || a.s != b.s || a.items.size() != b.items.size() ||
      a.kwargs.size() != b.kwargs.size())
    return false;
  if (a.kind == Expr::Kind::Float && !(a.f == b.f)) return false;
  for (size_t k = 0; k < a.items.size(); ++k)
    if (!sameExpr(a.items[k], b.items[k])) return false;
  for (size_t k = 0; k < a.kwargs.size(); ++k)
    if (a.kwargs[k].first != b.kwargs[k].first || !sameExpr(a.kwargs[k].second, b.kwargs[k].second)) return false;
  return true;
}

// An index of basic items only, none of which names a value: ints, slices
// with constant bounds, None, Ellipsis. The region it denotes depends on
// the indexed tensor's type alone.
bool basicIndex(const Expr& idx) {
  const std::vector<Expr> items = idx.kind == Expr::Kind::Tuple ? idx.items : std::vector<Expr>{idx};
  for (const auto& i : items) {
    if (i.kind == Expr::Kind::Int || i.kind == Expr::Kind::None) continue;
    if (i.kind == Expr::Kind::Name && i.s == "Ellipsis") continue;
    if (i.kind == Expr::Kind::Call && i.s == "slice" && i.kwargs.empty() && i.items.size() <= 3 &&
        std::all_of(i.items.begin(), i.items.end(),
                    [](const Expr& b) { return b.kind == Expr::Kind::Int || b.kind == Expr::Kind::None; }))
      continue;
    return false;
  }
  return true;
}

// Statement `at`'s `operator.setitem(base, index, value)`, if it is one.
const Expr* setItemAt(const Module& m, size_t at) {
  if (at >= m.body.size()) return nullptr;
  const Expr& v = m.body[at].value;
  if (v.kind != Expr::Kind::Call || v.s != "operator.setitem" || v.items.size() != 3 || !v.kwargs.empty())
    return nullptr;
  return &v;
}

}  // namespace

AliasTracker::AliasTracker(const Module& m) : m_(m) {
  for (size_t k = 0; k < m.body.size(); ++k) reads(m.body[k].value, k, reads_);
}

AliasTracker::Cell& AliasTracker::add(const std::string& name, int storage, int layout) {
  Cell& c = cells_[name];
  c = Cell{storage, layout, false, std::nullopt};
  return c;
}

const AliasTracker::Cell* AliasTracker::cell(const Expr& x) const {
  if (x.kind != Expr::Kind::Name) return nullptr;
  auto it = cells_.find(x.s);
  return it == cells_.end() ? nullptr : &it->second;
}

void AliasTracker::input(const std::string& name) {
  int s = next_++;
  inputs_.insert(s);
  add(name, s, next_++);
}

void AliasTracker::fresh(const std::string& name) {
  int s = next_++;
  add(name, s, next_++);
}

void AliasTracker::same(const std::string& name, const std::string& of) {
  auto it = cells_.find(of);
  if (it == cells_.end()) return fresh(name);
  Cell c = it->second;
  cells_[name] = c;
}

void AliasTracker::view(const std::string& name, const std::string& of) {
  auto it = cells_.find(of);
  if (it == cells_.end()) return fresh(name);
  int s = it->second.storage;
  add(name, s, next_++).isView = true;
}

void AliasTracker::subscript(const std::string& name, const std::string& of, const Expr& index) {
  auto it = cells_.find(of);
  if (it == cells_.end()) return fresh(name);
  const Cell base = it->second;
  Cell& c = add(name, base.storage, next_++);
  c.isView = true;
  if (basicIndex(index)) c.origin = Origin{base.layout, index};
}

void AliasTracker::piece(const std::string& name, const std::string& tuple) {
  auto it = cells_.find(tuple);
  if (it == cells_.end() || !it->second.isView) return fresh(name);
  int s = it->second.storage;
  add(name, s, next_++).isView = true;
}

// `view` (a subscript view of a base) is mutated at statement `at`, and
// `other` is its base's layout: exact when the first statement from `at`
// on that reads a name of that layout is a later subscript assignment of
// the view's index into one, whose value is not the base itself. The base
// is not seen before it (it would show the view's new value), and the
// assignment overwrites the whole region: after it the base is the
// assignment's value.
bool AliasTracker::writtenBackBase(const Cell& view, const Cell& other, size_t at) const {
  if (!view.origin || other.layout != view.origin->layout) return false;
  size_t w = SIZE_MAX;
  for (const auto& [n, k] : cells_) {
    if (k.storage != other.storage || k.layout != other.layout) continue;
    auto r = reads_.find(n);
    if (r == reads_.end()) continue;
    auto first = std::lower_bound(r->second.begin(), r->second.end(), at);
    if (first != r->second.end()) w = std::min(w, *first);
  }
  if (w == SIZE_MAX || w == at) return false;
  const Expr* set = setItemAt(m_, w);
  if (!set) return false;
  const Cell* base = cell(set->items[0]);
  const Cell* value = cell(set->items[2]);
  return base && base->storage == other.storage && base->layout == other.layout &&
         sameExpr(set->items[1], view.origin->index) &&
         !(value && value->storage == other.storage && value->layout == other.layout);
}

// Statement `at` assigns into `base`, and `other` is a subscript view of
// base: exact when the assignment writes exactly other's region with a
// value that is other itself (an exact alias). The value is read before
// the region is overwritten, with the same elements; afterwards the region
// holds that value, which is other's.
bool AliasTracker::writtenRegion(const Cell& base, const Cell& other, size_t at) const {
  const Expr* set = setItemAt(m_, at);
  if (!set || !other.origin || other.origin->layout != base.layout) return false;
  const Cell* target = cell(set->items[0]);
  const Cell* value = cell(set->items[2]);
  return target && target->storage == base.storage && target->layout == base.layout &&
         sameExpr(set->items[1], other.origin->index) && value && value->storage == other.storage &&
         value->layout == other.layout;
}

Result<std::vector<std::string>> AliasTracker::mutateUnknown(const std::string& name, const std::string& node,
                                                             const std::string& loc) const {
  auto it = cells_.find(name);
  if (it == cells_.end()) return std::vector<std::string>{name};
  if (inputs_.count(it->second.storage)) return mutate(name, 0, node, loc);
  std::vector<std::string> out;
  for (const auto& [n, d] : cells_)
    if (d.storage == it->second.storage) out.push_back(n);
  return out;
}

Result<std::vector<std::string>> AliasTracker::mutate(const std::string& name, size_t at, const std::string& node,
                                                      const std::string& loc) const {
  auto it = cells_.find(name);
  if (it == cells_.end())
    return makeError("fx-unsupported", "node '" + node + "' mutates '" + name +
                                           "' in place, but which values share its storage is unknown",
                     loc);
  const Cell& c = it->second;
  if (inputs_.count(c.storage))
    return makeError("fx-unsupported",
                     "node '" + node + "' mutates '" + name +
                         "' in place, which is (a view of) a graph input or module attribute: the caller would see "
                         "the new value, a side effect the import cannot represent; in-place ops on graph inputs "
                         "are not supported",
                     loc);
  std::vector<std::string> same;
  for (const auto& [n, d] : cells_) {
    if (d.storage != c.storage) continue;
    if (d.layout == c.layout) {
      same.push_back(n);
      continue;
    }
    auto r = reads_.find(n);
    if (r == reads_.end() || r->second.back() < at) continue;
    if (writtenBackBase(c, d, at) || writtenRegion(c, d, at)) continue;
    return makeError("fx-unsupported",
                     "node '" + node + "' mutates '" + name + "' in place while '" + n +
                         "', which may share its storage (a view of it, or the value it views), is still read: "
                         "mutation through views is not supported",
                     loc);
  }
  return same;
}

}  // namespace sp::frontend::fx

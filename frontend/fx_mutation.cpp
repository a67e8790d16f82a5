#include "frontend/fx_mutation.h"

namespace sp::frontend::fx {

namespace {

// The names statement `at` reads: its Name expressions and the receivers
// of its method calls and attributes (`v` of `v.mul(2)`, whose callee is
// "v.mul").
void reads(const Expr& x, size_t at, std::map<std::string, size_t>& last) {
  if (x.kind == Expr::Kind::Name) last[x.s] = at;
  if ((x.kind == Expr::Kind::Call || x.kind == Expr::Kind::Dotted) && x.s.find('.') != std::string::npos)
    last[x.s.substr(0, x.s.find('.'))] = at;
  for (const auto& i : x.items) reads(i, at, last);
  for (const auto& [k, v] : x.kwargs) reads(v, at, last);
}

}  // namespace

AliasTracker::AliasTracker(const Module& m) {
  for (size_t k = 0; k < m.body.size(); ++k) reads(m.body[k].value, k, lastRead_);
}

AliasTracker::Cell& AliasTracker::add(const std::string& name, int storage, int layout) {
  Cell& c = cells_[name];
  c = Cell{storage, layout, false};
  return c;
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

void AliasTracker::piece(const std::string& name, const std::string& tuple) {
  auto it = cells_.find(tuple);
  if (it == cells_.end() || !it->second.isView) return fresh(name);
  int s = it->second.storage;
  add(name, s, next_++).isView = true;
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
    auto r = lastRead_.find(n);
    if (r != lastRead_.end() && r->second >= at)
      return makeError("fx-unsupported",
                       "node '" + node + "' mutates '" + name + "' in place while '" + n +
                           "', which may share its storage (a view of it, or the value it views), is still read: "
                           "mutation through views is not supported",
                       loc);
  }
  return same;
}

}  // namespace sp::frontend::fx

#include "frontend/fx_masked_update.h"

namespace sp::frontend::fx {

namespace {

bool reads(const Expr& x, const std::set<std::string>& names) {
  if (x.kind == Expr::Kind::Name && names.count(x.s)) return true;
  if ((x.kind == Expr::Kind::Call || x.kind == Expr::Kind::Dotted) && x.s.find('.') != std::string::npos &&
      names.count(x.s.substr(0, x.s.find('.'))))
    return true;
  for (const auto& i : x.items)
    if (reads(i, names)) return true;
  for (const auto& [k, v] : x.kwargs)
    if (reads(v, names)) return true;
  return false;
}

bool isName(const Expr& x, const std::string& name) { return x.kind == Expr::Kind::Name && x.s == name; }

// `g = x[mask]` or `g = operator.getitem(x, mask)`: x and mask.
bool maskGetitem(const Stmt& s, std::string& base, std::string& mask) {
  if (s.kind != Stmt::Kind::Assign) return false;
  const Expr& v = s.value;
  const bool sub = v.kind == Expr::Kind::Subscript ||
                   (v.kind == Expr::Kind::Call && v.s == "operator.getitem" && v.kwargs.empty());
  if (!sub || v.items.size() != 2 || v.items[0].kind != Expr::Kind::Name || v.items[1].kind != Expr::Kind::Name)
    return false;
  base = v.items[0].s;
  mask = v.items[1].s;
  return base != mask;
}

// Mutates `name` in place: `name.op_(...)`, `operator.i*(name, ...)`,
// `operator.setitem(name, ...)` (conservative: any trailing underscore).
bool mutates(const Expr& v, const std::string& name) {
  if (v.kind != Expr::Kind::Call) return false;
  if (v.s.rfind(name + ".", 0) == 0 && v.s.back() == '_') return true;
  return (v.s.rfind("operator.i", 0) == 0 || v.s == "operator.setitem") && !v.items.empty() &&
         isName(v.items[0], name);
}

std::optional<MaskedUpdate> match(const Module& m, size_t at) {
  MaskedUpdate u;
  if (!maskGetitem(m.body[at], u.base, u.mask)) return std::nullopt;
  static const std::set<std::string> kOps = {"operator.iadd", "operator.isub", "operator.imul",
                                             "operator.itruediv"};
  u.getitem = at;
  u.copy.insert(m.body[at].target);
  size_t j = at + 1;
  for (; j < m.body.size(); ++j) {
    const Stmt& s = m.body[j];
    if (s.kind == Stmt::Kind::Return) return std::nullopt;
    const Expr& v = s.value;
    if (mutates(v, u.mask)) return std::nullopt;
    if (!reads(v, u.copy)) continue;
    if (s.kind == Stmt::Kind::Assign && v.kind == Expr::Kind::Call && kOps.count(v.s) && v.items.size() == 2 &&
        v.kwargs.empty() && v.items[0].kind == Expr::Kind::Name && u.copy.count(v.items[0].s) &&
        !reads(v.items[1], u.copy)) {
      u.updates.push_back(j);
      u.copy.insert(s.target);
      continue;
    }
    if (v.kind == Expr::Kind::Call && v.s == "operator.setitem" && v.items.size() == 3 && v.kwargs.empty() &&
        isName(v.items[0], u.base) && isName(v.items[1], u.mask) && v.items[2].kind == Expr::Kind::Name &&
        u.copy.count(v.items[2].s) && !u.updates.empty()) {
      u.setitem = j;
      break;
    }
    return std::nullopt;
  }
  if (j == m.body.size()) return std::nullopt;
  for (size_t k = j + 1; k < m.body.size(); ++k)
    if (reads(m.body[k].value, u.copy)) return std::nullopt;
  return u;
}

}  // namespace

std::map<size_t, MaskedUpdate*> indexMaskedUpdates(const Module& m, std::vector<MaskedUpdate>& found) {
  found.clear();
  for (size_t k = 0; k < m.body.size(); ++k)
    if (auto u = match(m, k)) found.push_back(std::move(*u));
  std::map<size_t, MaskedUpdate*> at;
  for (auto& u : found) {
    at[u.getitem] = &u;
    at[u.setitem] = &u;
    for (size_t k : u.updates) at[k] = &u;
  }
  return at;
}

bool maskFits(const TRef& x, const TRef& mask) {
  if (mask.dtype() != ir::DType::Bool || mask.rank() < 1 || mask.rank() > x.rank()) return false;
  for (int64_t d = 0; d < mask.rank(); ++d)
    if (!(mask.type.shape[size_t(d)] == x.type.shape[size_t(d)])) return false;
  return true;
}

bool operandFits(const TRef& x, const TRef& mask, const std::optional<TRef>& v) {
  if (!v) return true;
  ir::Shape one{ir::Dim(1)};
  one.insert(one.end(), x.type.shape.begin() + mask.rank(), x.type.shape.end());
  auto b = broadcastShapes(v->type.shape, one);
  return b && *b == one;
}

TRef maskedWrite(Emitter& e, const TRef& x, const TRef& mask, const TRef& value) {
  std::vector<int64_t> axes;
  for (int64_t d = mask.rank(); d < x.rank(); ++d) axes.push_back(d);
  return e.emit(ir::OpKind::Where, {e.unsqueeze(mask, axes), value, x}, {}, x.type, "where");
}

}  // namespace sp::frontend::fx

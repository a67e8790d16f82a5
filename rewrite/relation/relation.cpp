// Relation expressions: integer expressions, rank spaces, factories, printing.
#include "rewrite/relation/relation.h"

#include <algorithm>
#include <cctype>
#include <optional>
#include <set>
#include <sstream>

namespace sp::rewrite {

RankSpace RankSpace::of(const ir::Program& p) { return RankSpace{p.mesh(), p.namedGroups()}; }

Result<std::vector<int64_t>> RankSpace::members(const std::string& name, int64_t rank) const {
  int64_t world = worldSize();
  if (rank < 0 || rank >= world)
    return makeError("rank-out-of-range", "rank " + std::to_string(rank) + " is outside the world of " +
                                              std::to_string(world) + " ranks");
  return ir::groupMembers(mesh, groups, name, rank);
}

Result<int64_t> RankSpace::indexOf(const std::string& name, int64_t rank) const {
  int64_t world = worldSize();
  if (rank < 0 || rank >= world)
    return makeError("rank-out-of-range", "rank " + std::to_string(rank) + " is outside the world of " +
                                              std::to_string(world) + " ranks");
  return ir::groupIndex(mesh, groups, name, rank);
}

IntExpr IntExpr::constant(int64_t v) {
  IntExpr e;
  e.kind = Kind::Const;
  e.value = v;
  return e;
}
IntExpr IntExpr::var(std::string name) {
  IntExpr e;
  e.kind = Kind::Var;
  e.name = std::move(name);
  return e;
}
IntExpr IntExpr::index(IntExpr rank, std::string group) {
  IntExpr e;
  e.kind = Kind::Index;
  e.name = std::move(group);
  e.args = {std::move(rank)};
  return e;
}
IntExpr operator+(IntExpr a, IntExpr b) {
  IntExpr e;
  e.kind = IntExpr::Kind::Add;
  e.args = {std::move(a), std::move(b)};
  return e;
}
IntExpr operator-(IntExpr a, IntExpr b) {
  IntExpr e;
  e.kind = IntExpr::Kind::Sub;
  e.args = {std::move(a), std::move(b)};
  return e;
}
IntExpr operator*(IntExpr a, int64_t c) {
  IntExpr e;
  e.kind = IntExpr::Kind::MulC;
  e.value = c;
  e.args = {std::move(a)};
  return e;
}
IntExpr IntExpr::divC(int64_t c) const {
  SP_ASSERT(c > 0, "divC by a non-positive constant");
  IntExpr e;
  e.kind = Kind::DivC;
  e.value = c;
  e.args = {*this};
  return e;
}
IntExpr IntExpr::modC(int64_t c) const {
  SP_ASSERT(c > 0, "modC by a non-positive constant");
  IntExpr e;
  e.kind = Kind::ModC;
  e.value = c;
  e.args = {*this};
  return e;
}

bool IntExpr::operator==(const IntExpr& o) const {
  return kind == o.kind && value == o.value && name == o.name && args == o.args;
}

static int64_t floorDiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

Result<int64_t> IntExpr::eval(const IntVars& vars, const RankSpace* ranks) const {
  switch (kind) {
    case Kind::Const: return value;
    case Kind::Var: {
      auto it = vars.find(name);
      if (it == vars.end()) return makeError("unbound-variable", "variable '" + name + "' is not bound");
      return it->second;
    }
    case Kind::Add: case Kind::Sub: {
      SP_ASSIGN(int64_t a, args[0].eval(vars, ranks));
      SP_ASSIGN(int64_t b, args[1].eval(vars, ranks));
      int64_t out = 0;
      if (kind == Kind::Add ? __builtin_add_overflow(a, b, &out) : __builtin_sub_overflow(a, b, &out))
        return makeError("integer-overflow", "integer overflow in " + str());
      return out;
    }
    case Kind::MulC: {
      SP_ASSIGN(int64_t a, args[0].eval(vars, ranks));
      int64_t out = 0;
      if (__builtin_mul_overflow(a, value, &out)) return makeError("integer-overflow", "integer overflow in " + str());
      return out;
    }
    case Kind::DivC: case Kind::ModC: {
      SP_ASSIGN(int64_t a, args[0].eval(vars, ranks));
      if (kind == Kind::DivC) return floorDiv(a, value);
      int64_t m = a % value;  // value > 0: the floor remainder without a product that can overflow
      return m < 0 ? m + value : m;
    }
    case Kind::Index: {
      SP_ASSIGN(int64_t r, args[0].eval(vars, ranks));
      if (!ranks) return makeError("no-rank-space", "idx(" + args[0].str() + ", " + name + ") needs a mesh");
      return ranks->indexOf(name, r);
    }
  }
  return int64_t(0);
}

namespace {
// Precedence: 1 = additive, 2 = multiplicative, 3 = atom.
int prec(const IntExpr& e) {
  switch (e.kind) {
    case IntExpr::Kind::Add: case IntExpr::Kind::Sub: return 1;
    case IntExpr::Kind::MulC: case IntExpr::Kind::DivC: case IntExpr::Kind::ModC: return 2;
    case IntExpr::Kind::Const: return e.value < 0 ? 1 : 3;
    default: return 3;
  }
}
std::string wrap(const IntExpr& e, int need) {
  return prec(e) < need ? "(" + e.str() + ")" : e.str();
}
}  // namespace

std::string IntExpr::str() const {
  switch (kind) {
    case Kind::Const: return std::to_string(value);
    case Kind::Var: return name;
    case Kind::Add: return args[0].str() + "+" + wrap(args[1], 2);
    case Kind::Sub: return args[0].str() + "-" + wrap(args[1], 2);
    case Kind::MulC: return wrap(args[0], 2) + "*" + (value < 0 ? "(" + std::to_string(value) + ")" : std::to_string(value));
    case Kind::DivC: return wrap(args[0], 2) + "/" + std::to_string(value);
    case Kind::ModC: return wrap(args[0], 2) + "%" + std::to_string(value);
    case Kind::Index: return "idx(" + args[0].str() + "," + name + ")";
  }
  return "?";
}

std::string_view relOpName(RelOp op) {
  switch (op) {
#define RELOP(E, NAME, MINA, MAXA, IROP, ATTRS, DOC) \
  case RelOp::E:                                    \
    return NAME;
#include "rewrite/relation/relation_ops.def"
#undef RELOP
  }
  return "?";
}

std::string RankDomain::str() const {
  return isRange ? std::to_string(lo) + ".." + std::to_string(hi) : group;
}

RelPtr Rel::seq(std::string name) {
  auto r = std::make_shared<Rel>();
  r->op = RelOp::Seq;
  r->name = std::move(name);
  return r;
}
RelPtr Rel::dist(IntExpr rank, std::string name) {
  auto r = std::make_shared<Rel>();
  r->op = RelOp::Dist;
  r->rank = std::move(rank);
  r->name = std::move(name);
  return r;
}
RelPtr Rel::concat(int64_t dim, std::vector<RelPtr> parts) {
  SP_ASSERT(!parts.empty(), "concat of no parts");
  auto r = std::make_shared<Rel>();
  r->op = RelOp::Concat;
  r->dim = dim;
  r->args = std::move(parts);
  return r;
}
RelPtr Rel::sum(std::vector<RelPtr> parts) {
  SP_ASSERT(!parts.empty(), "sum of no parts");
  auto r = std::make_shared<Rel>();
  r->op = RelOp::Sum;
  r->args = std::move(parts);
  return r;
}
RelPtr Rel::slice(RelPtr x, int64_t dim, IntExpr start, IntExpr end) {
  auto r = std::make_shared<Rel>();
  r->op = RelOp::Slice;
  r->dim = dim;
  r->start = std::move(start);
  r->end = std::move(end);
  r->args = {std::move(x)};
  return r;
}
RelPtr Rel::reshape(RelPtr x, ir::Shape shape) {
  auto r = std::make_shared<Rel>();
  r->op = RelOp::Reshape;
  r->shape = std::move(shape);
  r->args = {std::move(x)};
  return r;
}
RelPtr Rel::permute(RelPtr x, std::vector<int64_t> perm) {
  auto r = std::make_shared<Rel>();
  r->op = RelOp::Permute;
  r->perm = std::move(perm);
  r->args = {std::move(x)};
  return r;
}
RelPtr Rel::scale(RelPtr x, double factor) {
  auto r = std::make_shared<Rel>();
  r->op = RelOp::Scale;
  r->factor = factor;
  r->args = {std::move(x)};
  return r;
}
RelPtr Rel::forEach(std::string var, RankDomain domain, RelPtr body) {
  auto r = std::make_shared<Rel>();
  r->op = RelOp::For;
  r->name = std::move(var);
  r->domain = std::move(domain);
  r->args = {std::move(body)};
  return r;
}

bool equal(const Rel& a, const Rel& b) {
  if (a.op != b.op || a.name != b.name || !(a.rank == b.rank) || a.dim != b.dim ||
      !(a.start == b.start) || !(a.end == b.end) || a.shape != b.shape || a.perm != b.perm ||
      a.factor != b.factor || !(a.domain == b.domain) || a.args.size() != b.args.size())
    return false;
  for (size_t i = 0; i < a.args.size(); ++i)
    if (!equal(*a.args[i], *b.args[i])) return false;
  return true;
}

static std::string fmtFactor(double f) {
  std::ostringstream os;
  os.precision(17);
  os << f;
  return os.str();
}

std::string relName(const std::string& name) {
  bool ident = !name.empty() && (std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_');
  for (char c : name) ident = ident && (std::isalnum(static_cast<unsigned char>(c)) || c == '_');
  if (ident) return name;
  std::string q = "\"";
  for (char c : name) q += c == '"' || c == '\\' ? std::string("\\") + c : std::string(1, c);
  return q + "\"";
}

namespace {

// `r` printed with every dist leaf's rank as the variable `var`, when all of
// its dist leaves name one constant rank (returned in *rank); nullopt when
// they name several, none, or a non-constant one, or `r` has a comprehension.
std::optional<std::string> strOverRank(const Rel& r, const std::string& var, std::optional<int64_t>* rank) {
  if (r.op == RelOp::For) return std::nullopt;
  if (r.op == RelOp::Dist) {
    if (r.rank.kind != IntExpr::Kind::Const || (*rank && **rank != r.rank.value)) return std::nullopt;
    *rank = r.rank.value;
    return "dist[" + var + "]." + relName(r.name);
  }
  Rel copy = r;
  std::vector<std::string> parts;
  for (const auto& a : r.args) {
    auto p = strOverRank(*a, var, rank);
    if (!p) return std::nullopt;
    parts.push_back(*p);
  }
  // Print the node with stand-in leaves for its operands, then put them in.
  for (size_t i = 0; i < copy.args.size(); ++i) copy.args[i] = Rel::seq("sp_operand_" + std::to_string(i) + "_");
  std::string text = str(copy);
  for (size_t i = 0; i < parts.size(); ++i) {
    std::string key = "seq.sp_operand_" + std::to_string(i) + "_";
    auto at = text.find(key);
    if (at == std::string::npos) return std::nullopt;
    text.replace(at, key.size(), parts[i]);
  }
  return text;
}

}  // namespace

std::string str(const Rel& r) {
  // Parts of a concat or sum over 4 or more consecutive ranks that differ
  // only in the rank print as one comprehension ("for r in 0..255:
  // dist[r].y"), which parses back to the same parts: a relation over a
  // large group stays readable.
  auto joinArgs = [&]() {
    std::string s;
    auto add = [&](const std::string& t) { s += (s.empty() ? "" : ", ") + t; };
    size_t i = 0;
    while (i < r.args.size()) {
      std::optional<int64_t> rank0;
      auto t0 = strOverRank(*r.args[i], "r", &rank0);
      size_t j = i + 1;
      while (t0 && rank0 && j < r.args.size()) {
        std::optional<int64_t> rank;
        auto t = strOverRank(*r.args[j], "r", &rank);
        if (!t || *t != *t0 || !rank || *rank != *rank0 + int64_t(j - i)) break;
        ++j;
      }
      if (t0 && rank0 && j - i >= 4) {
        add("for r in " + std::to_string(*rank0) + ".." + std::to_string(*rank0 + int64_t(j - i) - 1) + ": " + *t0);
        i = j;
      } else {
        add(str(*r.args[i]));
        ++i;
      }
    }
    return s;
  };
  switch (r.op) {
    case RelOp::Seq: return "seq." + relName(r.name);
    case RelOp::Dist: return "dist[" + r.rank.str() + "]." + relName(r.name);
    case RelOp::Concat: return "concat(dim=" + std::to_string(r.dim) + ", " + joinArgs() + ")";
    case RelOp::Sum: return "sum(" + joinArgs() + ")";
    case RelOp::Slice:
      return "slice(" + str(*r.args[0]) + ", dim=" + std::to_string(r.dim) + ", start=" +
             r.start.str() + ", end=" + r.end.str() + ")";
    case RelOp::Reshape: {
      std::string s;
      for (const auto& d : r.shape) s += (s.empty() ? "" : ", ") + d.str();
      return "reshape(" + str(*r.args[0]) + ", [" + s + "])";
    }
    case RelOp::Permute: {
      std::string s;
      for (int64_t p : r.perm) s += (s.empty() ? "" : ", ") + std::to_string(p);
      return "permute(" + str(*r.args[0]) + ", [" + s + "])";
    }
    case RelOp::Scale: return "scale(" + str(*r.args[0]) + ", " + fmtFactor(r.factor) + ")";
    case RelOp::For: return "for " + r.name + " in " + r.domain.str() + ": " + str(*r.args[0]);
  }
  return "?";
}


namespace {
void joinBoxes(RelBoxes& b) {
  if (b.dim < 0) return;
  const size_t d = size_t(b.dim);
  std::vector<RelBoxes::Box> out;
  for (auto& x : b.list) {
    if (!out.empty()) {
      auto& y = out.back();
      bool same = y.size() == x.size() && y[d].second == x[d].first;
      for (size_t k = 0; same && k < x.size(); ++k) same = k == d || y[k] == x[k];
      if (same) {
        y[d].second = x[d].second;
        continue;
      }
    }
    out.push_back(x);
  }
  b.list = std::move(out);
  if (b.list.size() == 1) b.dim = -1;
}
}  // namespace

std::vector<int64_t> RelBoxes::dims() const {
  std::vector<int64_t> out(list.empty() ? 0 : list[0].size(), 0);
  for (size_t k = 0; k < out.size(); ++k)
    for (const Box& b : list) {
      const int64_t e = b[k].second - b[k].first;
      out[k] = int64_t(k) == dim ? out[k] + e : e;
    }
  return out;
}

std::vector<RelBoxes::Box> cutBoxes(const std::vector<RelBoxes::Box>& list, size_t d, int64_t a, int64_t b) {
  std::vector<RelBoxes::Box> out;
  int64_t off = 0;
  for (const auto& x : list) {
    const int64_t w = x[d].second - x[d].first, lo = std::max(a, off), hi = std::min(b, off + w);
    if (lo < hi) {
      auto y = x;
      y[d] = {x[d].first + lo - off, x[d].first + hi - off};
      out.push_back(std::move(y));
    }
    off += w;
  }
  return out;
}

std::optional<RelBoxes> relBoxes(const Rel& r,
                                 const std::function<std::optional<ir::Shape>(const std::string&)>& seqShape) {
  auto konst = [](const IntExpr& e) { return e.kind == IntExpr::Kind::Const; };
  switch (r.op) {
    case RelOp::Seq: {
      auto shape = seqShape(r.name);
      if (!shape || !ir::isConcrete(*shape)) return std::nullopt;
      RelBoxes b{r.name, -1, {{}}};
      for (const ir::Dim& d : *shape) b.list[0].emplace_back(0, d.value());
      return b;
    }
    case RelOp::Slice: {
      auto x = relBoxes(*r.args[0], seqShape);
      if (!x || !konst(r.start) || !konst(r.end)) return std::nullopt;
      const int64_t R = int64_t(x->list[0].size()), d = r.dim < 0 ? r.dim + R : r.dim;
      const int64_t s = r.start.value, e = r.end.value;
      if (d < 0 || d >= R || s < 0 || e <= s) return std::nullopt;
      if (x->dim == d) {
        int64_t total = 0;
        for (const auto& b : x->list) total += b[size_t(d)].second - b[size_t(d)].first;
        if (e > total) return std::nullopt;
        x->list = cutBoxes(x->list, size_t(d), s, e);
      } else {
        for (auto& b : x->list) {
          if (e > b[size_t(d)].second - b[size_t(d)].first) return std::nullopt;
          b[size_t(d)] = {b[size_t(d)].first + s, b[size_t(d)].first + e};
        }
      }
      joinBoxes(*x);
      return x;
    }
    case RelOp::Concat: {
      RelBoxes out;
      for (const auto& p : r.args) {
        auto x = relBoxes(*p, seqShape);
        if (!x || (!out.leaf.empty() && x->leaf != out.leaf)) return std::nullopt;
        const int64_t R = int64_t(x->list[0].size()), d = r.dim < 0 ? r.dim + R : r.dim;
        if (d < 0 || d >= R || (x->dim >= 0 && x->dim != d)) return std::nullopt;
        out.leaf = x->leaf, out.dim = d;
        out.list.insert(out.list.end(), x->list.begin(), x->list.end());
      }
      if (out.list.empty()) return std::nullopt;
      joinBoxes(out);
      return out;
    }
    default:
      return std::nullopt;
  }
}

}  // namespace sp::rewrite

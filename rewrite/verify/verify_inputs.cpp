// Input relations, inverted: from "D input = f(S inputs)" to "S input =
// clean expression over D inputs".
#include <algorithm>
#include <functional>
#include <set>

#include "rewrite/engine/engine_verify.h"

namespace sp::rewrite {

Result<RelPtr> concretize(const Rel& r, const RelScope& scope) {
  auto c = [](int64_t v) { return IntExpr::constant(v); };
  switch (r.op) {
    case RelOp::Seq: return Rel::seq(r.name);
    case RelOp::Dist: {
      SP_ASSIGN(int64_t rank, r.rank.eval(scope.vars, scope.ranks));
      return Rel::dist(c(rank), r.name);
    }
    case RelOp::Concat: case RelOp::Sum: {
      std::vector<RelPtr> parts;
      for (const auto& a : r.args) {
        if (a->op != RelOp::For) {
          SP_ASSIGN(RelPtr p, concretize(*a, scope));
          parts.push_back(p);
          continue;
        }
        std::vector<int64_t> values;
        if (a->domain.isRange) {
          for (int64_t v = a->domain.lo; v <= a->domain.hi; ++v) values.push_back(v);
        } else {
          if (!scope.ranks) return makeError("no-rank-space", "for " + a->name + " in " + a->domain.group + ": no mesh");
          SP_ASSIGN(values, scope.ranks->members(a->domain.group, scope.anchorRank));
        }
        for (int64_t v : values) {
          RelScope inner = scope;
          inner.vars[a->name] = v;
          inner.anchorRank = v;
          SP_ASSIGN(RelPtr p, concretize(*a->args[0], inner));
          parts.push_back(p);
        }
      }
      if (parts.empty()) return makeError("empty-relation", str(r) + ": no parts");
      return r.op == RelOp::Concat ? Rel::concat(r.dim, parts) : Rel::sum(parts);
    }
    case RelOp::Slice: {
      SP_ASSIGN(RelPtr x, concretize(*r.args[0], scope));
      SP_ASSIGN(int64_t s, r.start.eval(scope.vars, scope.ranks));
      SP_ASSIGN(int64_t e, r.end.eval(scope.vars, scope.ranks));
      return Rel::slice(x, r.dim, c(s), c(e));
    }
    case RelOp::Reshape: {
      SP_ASSIGN(RelPtr x, concretize(*r.args[0], scope));
      return Rel::reshape(x, r.shape);
    }
    case RelOp::Permute: {
      SP_ASSIGN(RelPtr x, concretize(*r.args[0], scope));
      return Rel::permute(x, r.perm);
    }
    case RelOp::Scale: {
      SP_ASSIGN(RelPtr x, concretize(*r.args[0], scope));
      return Rel::scale(x, r.factor);
    }
    case RelOp::For: break;
  }
  return makeError("comprehension-outside-concat", "'" + str(r) + "' must be a part of concat or sum");
}

namespace {

// A box of an S input: per sliced dim, [start, end); dims not listed whole.
using Box = std::map<int64_t, std::pair<int64_t, int64_t>>;

struct Piece {
  std::string seq;
  Box box;     // empty: the whole tensor
  RelPtr dist; // D-side expression equal to the piece
};

int64_t constOf(const IntExpr& e) { return e.eval({}, nullptr).value(); }

// slice(concat(parts)) with constant bounds as the parts it cuts: along the
// concat's dim, the parts overlapping [start, end), each cut to its overlap
// (one part alone is not concatenated); along another dim, the concat of the
// parts' slices. Null when `e` is no such slice or a size is not concrete.
RelPtr sliceThroughConcat(const Rel& e, const TypeLookup& types) {
  if (e.op != RelOp::Slice || e.args[0]->op != RelOp::Concat) return nullptr;
  const Rel& cat = *e.args[0];
  auto rank = inferType(cat, types, {});
  if (!rank.ok()) return nullptr;
  int64_t n = int64_t(rank->shape.size());
  int64_t sd = normDim(e.dim, n), cd = normDim(cat.dim, n);
  int64_t lo = constOf(e.start), hi = constOf(e.end);
  std::vector<RelPtr> parts;
  int64_t off = 0;
  for (const auto& p : cat.args) {
    if (sd != cd) {
      parts.push_back(Rel::slice(p, sd, e.start, e.end));
      continue;
    }
    auto t = inferType(*p, types, {});
    if (!t.ok() || !t->shape[size_t(cd)].isConcrete()) return nullptr;
    int64_t w = t->shape[size_t(cd)].value(), a = std::max(lo, off), z = std::min(hi, off + w);
    if (a < z)
      parts.push_back(a == off && z == off + w ? p
                                               : Rel::slice(p, cd, IntExpr::constant(a - off), IntExpr::constant(z - off)));
    off += w;
  }
  if (parts.empty()) return nullptr;
  return parts.size() == 1 ? parts[0] : Rel::concat(cd, parts);
}

// A chain of slices over a concat with the concat cut away (its innermost
// slice through the concat, the outer ones kept); null when there is none.
RelPtr cutConcats(const Rel& e, const TypeLookup& types) {
  if (e.op != RelOp::Slice) return nullptr;
  RelPtr arg = e.args[0];
  RelPtr cut = arg->op == RelOp::Slice ? cutConcats(*arg, types) : nullptr;
  if (cut) return Rel::slice(cut, e.dim, e.start, e.end);
  return sliceThroughConcat(e, types);
}

// E (over seq tensors) == D (over dist tensors): split into pieces of S inputs.
Status decompose(const Rel& e, RelPtr d, const TypeLookup& types, std::vector<Piece>& out, bool& inexact) {
  switch (e.op) {
    case RelOp::Seq: out.push_back({e.name, {}, d}); return okStatus();
    case RelOp::Slice: {
      if (RelPtr cut = cutConcats(e, types)) return decompose(*cut, d, types, out, inexact);
      // slices of slices of one S input: a box (data parallel's batch rows
      // of sequence parallel's token shard)
      std::vector<const Rel*> chain{&e};
      while (chain.back()->args[0]->op == RelOp::Slice) chain.push_back(chain.back()->args[0].get());
      const Rel& base = *chain.back()->args[0];
      if (base.op != RelOp::Seq) { inexact = true; return okStatus(); }
      SP_ASSIGN(ir::TensorType t, types.seq(base.name));
      Box box;
      for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
        int64_t dim = normDim((*it)->dim, int64_t(t.shape.size()));
        int64_t lo = box.count(dim) ? box[dim].first : 0;
        box[dim] = {lo + constOf((*it)->start), lo + constOf((*it)->end)};
      }
      out.push_back({base.name, box, d});
      return okStatus();
    }
    case RelOp::Concat: {
      int64_t off = 0;
      for (const auto& p : e.args) {
        SP_ASSIGN(ir::TensorType t, inferType(*p, types, {}));
        int64_t dim = normDim(e.dim, int64_t(t.shape.size()));
        if (!t.shape[size_t(dim)].isConcrete()) { inexact = true; return okStatus(); }
        int64_t n = t.shape[size_t(dim)].value();
        SP_TRY(decompose(*p, Rel::slice(d, dim, IntExpr::constant(off), IntExpr::constant(off + n)), types, out, inexact));
        off += n;
      }
      return okStatus();
    }
    case RelOp::Scale:
      if (e.factor == 0) { inexact = true; return okStatus(); }
      return decompose(*e.args[0], Rel::scale(d, 1.0 / e.factor), types, out, inexact);
    case RelOp::Permute: {
      std::vector<int64_t> inv(e.perm.size());
      for (size_t i = 0; i < e.perm.size(); ++i) inv[size_t(e.perm[i])] = int64_t(i);
      return decompose(*e.args[0], Rel::permute(d, inv), types, out, inexact);
    }
    case RelOp::Reshape: {
      SP_ASSIGN(ir::TensorType t, inferType(*e.args[0], types, {}));
      return decompose(*e.args[0], Rel::reshape(d, t.shape), types, out, inexact);
    }
    default: inexact = true; return okStatus();
  }
}

void addFact(DistModel& m, const RelPtr& a, const RelPtr& b) {
  std::vector<DistLeaf> leaves;
  std::function<void(const Rel&)> walk = [&](const Rel& r) {
    if (r.op == RelOp::Dist) {
      const auto& g = m.prog->rank(constOf(r.rank));
      if (auto v = g.findValue(r.name)) leaves.emplace_back(constOf(r.rank), *v);
    }
    for (const auto& x : r.args) walk(*x);
  };
  walk(*a);
  walk(*b);
  for (const auto& l : leaves) m.facts[l].emplace_back(a, b);
}

}  // namespace

Result<std::vector<CheckedInput>> checkInputRelations(const ir::Graph& seq, const ir::Program& dist,
                                                     const RelationFile& rel) {
  RankSpace ranks = RankSpace::of(dist);
  SP_ASSIGN(auto bound, expandInputs(rel, ranks));
  TypeLookup types;
  types.seq = [&](const std::string& n) -> Result<ir::TensorType> {
    auto v = seq.findValue(n);
    if (!v) return makeError("unknown-tensor", "S has no tensor '" + n + "'");
    return seq.value(*v).type;
  };
  // Every D input and parameter must be covered.
  std::set<std::pair<int64_t, std::string>> covered;
  for (const auto& b : bound) covered.insert({b.rank, b.name});
  std::set<std::string> unrelated;
  for (const auto& u : rel.unrelated) {
    bool exists = false;
    for (int64_t r = 0; r < dist.worldSize(); ++r) {
      auto v = dist.rank(r).findValue(u.name);
      if (!v || dist.rank(r).value(*v).kind == ir::ValueKind::NodeOutput) continue;
      exists = true;
      if (covered.count({r, u.name}))
        return makeError("duplicate-relation", "D input '" + u.name + "' has a relation and is declared unrelated", u.location);
    }
    if (!exists) return makeError("unknown-tensor", "'unrelated " + u.name + "': D has no input or parameter of that name", u.location);
    unrelated.insert(u.name);
  }
  for (int64_t r = 0; r < dist.worldSize(); ++r) {
    const auto& g = dist.rank(r);
    std::vector<ir::ValueId> leaves = g.inputs();
    leaves.insert(leaves.end(), g.params().begin(), g.params().end());
    for (ir::ValueId v : leaves)
      if (!covered.count({r, g.value(v).name}) && !unrelated.count(g.value(v).name))
        return makeError("missing-input-relation", "rank " + std::to_string(r) + ": no relation for D " +
                                                       (g.value(v).kind == ir::ValueKind::Param ? "parameter" : "input") +
                                                       " '" + g.value(v).name + "'");
  }
  std::vector<CheckedInput> out;
  out.reserve(bound.size());
  for (const auto& b : bound) {
    auto v = dist.rank(b.rank).findValue(b.name);
    if (!v) return makeError("unknown-tensor", "rank " + std::to_string(b.rank) + " has no input '" + b.name + "'", b.location);
    SP_ASSIGN(RelPtr e, concretize(*b.expr, b.scope));
    // Every relation term is shape-checked before it is trusted: a slice out
    // of bounds, a reshape to another element count, or a result of another
    // shape than the D input it defines is bad input.
    std::string what = "rank " + std::to_string(b.rank) + ": relation of D input '" + b.name + "'";
    auto t = inferType(*e, types, {});
    if (!t) return makeError(t.error().id, what + ": " + t.error().message, b.location);
    const ir::TensorType& want = dist.rank(b.rank).value(*v).type;
    bool same = t->shape.size() == want.shape.size();
    for (size_t k = 0; same && k < want.shape.size(); ++k)
      same = !(t->shape[k].isConcrete() && want.shape[k].isConcrete()) || t->shape[k] == want.shape[k];
    if (!same)
      return makeError("relation-shape-mismatch", what + " is " + want.str() + " but " + str(*e) + " is " + t->str(),
                       b.location);
    out.push_back({b.rank, b.name, e, b.location});
  }
  return out;
}

namespace {

using Affine = AffineForm;
using Atom = AffineAtom;

bool addAffine(Affine& into, const Affine& b, int64_t sign) {
  if (__builtin_add_overflow(into.c, sign * b.c, &into.c)) return false;
  for (const auto& [a, v] : b.k) {
    int64_t& t = into.k[a];
    if (__builtin_add_overflow(t, sign * v, &t)) return false;
    if (t == 0) into.k.erase(a);
  }
  return true;
}

std::optional<Affine> affineOf(const IntExpr& e, const std::optional<std::string>& var, const ir::Program& dist,
                               std::map<Atom, int64_t>& hi) {
  switch (e.kind) {
    case IntExpr::Kind::Const: return Affine{e.value, {}};
    case IntExpr::Kind::Var:
      if (!var || e.name != *var) return std::nullopt;
      hi[Atom::rank()] = dist.worldSize() - 1;
      return Affine{0, {{Atom::rank(), 1}}};
    case IntExpr::Kind::Add: case IntExpr::Kind::Sub: {
      auto a = affineOf(e.args[0], var, dist, hi), b = affineOf(e.args[1], var, dist, hi);
      if (!a || !b || !addAffine(*a, *b, e.kind == IntExpr::Kind::Add ? 1 : -1)) return std::nullopt;
      return a;
    }
    case IntExpr::Kind::MulC: {
      auto a = affineOf(e.args[0], var, dist, hi);
      if (!a || __builtin_mul_overflow(a->c, e.value, &a->c)) return std::nullopt;
      for (auto& [_, v] : a->k)
        if (__builtin_mul_overflow(v, e.value, &v)) return std::nullopt;
      if (e.value == 0) a->k.clear();
      return a;
    }
    case IntExpr::Kind::Index: {
      const IntExpr& r = e.args[0];
      if (!var || r.kind != IntExpr::Kind::Var || r.name != *var ||
          !ir::isMeshAxisGroup(dist.mesh(), dist.namedGroups(), e.name))
        return std::nullopt;
      auto size = ir::groupMembers(dist.mesh(), dist.namedGroups(), e.name, 0);
      if (!size.ok()) return std::nullopt;
      hi[Atom::idx(e.name)] = int64_t(size->size()) - 1;
      return Affine{0, {{Atom::idx(e.name), 1}}};
    }
    case IntExpr::Kind::DivC: case IntExpr::Kind::ModC: {
      // Of one atom (coefficient 1, no constant): a new atom a / c or a % c
      // with its own range (floor division and the floor remainder by c > 0
      // are monotone, resp. bounded, over a's range [0, hi]).
      auto a = affineOf(e.args[0], var, dist, hi);
      if (!a || a->c != 0 || a->k.size() != 1 || a->k.begin()->second != 1 || e.value <= 0) return std::nullopt;
      const Atom& atom = a->k.begin()->first;
      bool div = e.kind == IntExpr::Kind::DivC;
      Atom name = atom;
      name.ops.emplace_back(div ? '/' : '%', e.value);
      int64_t top = hi.at(atom);
      hi[name] = div ? top / e.value : std::min(top, e.value - 1);
      return Affine{0, {{name, 1}}};
    }
  }
  return std::nullopt;
}

// [min, max] of an affine form over its atoms' ranges.
std::optional<std::pair<int64_t, int64_t>> rangeOf(const Affine& a, const std::map<Atom, int64_t>& hi) {
  int64_t lo = a.c, up = a.c;
  for (const auto& [atom, k] : a.k) {
    int64_t t = 0;
    if (__builtin_mul_overflow(k, hi.at(atom), &t)) return std::nullopt;
    if (__builtin_add_overflow(t < 0 ? lo : up, t, t < 0 ? &lo : &up)) return std::nullopt;
  }
  return std::make_pair(lo, up);
}

// Whether every slice of template term `t` (its value on one rank `c`)
// has a size that does not depend on the rank and bounds within its
// operand on every rank; other terms must not depend on the rank at all.
bool boundsHoldEverywhere(const Rel& t, const Rel& c, const std::optional<std::string>& var, const ir::Program& dist,
                          const TypeLookup& types) {
  if (t.op != c.op || t.args.size() != c.args.size()) return false;
  switch (t.op) {
    case RelOp::Seq: return true;
    case RelOp::Dist: case RelOp::For: return false;
    case RelOp::Slice: {
      std::map<Atom, int64_t> hi;
      auto s = affineOf(t.start, var, dist, hi), e = affineOf(t.end, var, dist, hi);
      if (!s || !e) return false;
      Affine size = *e;
      if (!addAffine(size, *s, -1) || !size.k.empty() || size.c < 0) return false;
      auto sr = rangeOf(*s, hi), er = rangeOf(*e, hi);
      if (!sr || !er || sr->first < 0) return false;
      auto ot = inferType(*c.args[0], types, {});
      if (!ot.ok()) return false;
      auto axis = ir::normAxis(t.dim, int64_t(ot->shape.size()), "slice");
      if (!axis.ok()) return false;
      const ir::Dim& ext = ot->shape[size_t(*axis)];
      if (ext.isConcrete() && er->second > ext.value()) return false;
      return boundsHoldEverywhere(*t.args[0], *c.args[0], var, dist, types);
    }
    default:
      for (size_t i = 0; i < t.args.size(); ++i)
        if (!boundsHoldEverywhere(*t.args[i], *c.args[i], var, dist, types)) return false;
      return true;
  }
}

}  // namespace

std::optional<AffineForm> affineForm(const IntExpr& e, const std::optional<std::string>& var, const ir::Program& dist,
                                     std::map<AffineAtom, int64_t>* hi) {
  std::map<AffineAtom, int64_t> h;
  return affineOf(e, var, dist, hi ? *hi : h);
}

std::string AffineAtom::str() const {
  std::string s = kind == Kind::Rank ? "r" : "idx(r, " + group + ")";
  for (const auto& [op, c] : ops) s = (ops.size() > 1 ? "(" + s + ")" : s) + op + std::to_string(c);
  return s;
}

Result<RelPtr> templateAt(const InputRelation& t, const RankSpace& ranks, int64_t rank) {
  RelScope s;
  s.ranks = &ranks;
  s.anchorRank = rank;
  if (t.loopVar) s.vars[*t.loopVar] = rank;
  return concretize(*t.expr, s);
}

std::optional<TemplateInputs> checkInputTemplates(const ir::Graph& seq, const ir::Program& dist,
                                                  const RelationFile& rel) {
  TemplateInputs out;
  const int64_t world = dist.worldSize();
  // The ranks each template covers: all (dist[*], r over a mesh-axis group)
  // or a range lo..hi.
  std::vector<std::pair<int64_t, int64_t>> covers;
  for (const auto& in : rel.inputs) {
    bool loop = in.loopVar && in.rank.kind == IntExpr::Kind::Var && in.rank.name == *in.loopVar;
    if (in.allRanks || (loop && !in.loopDomain.isRange &&
                        ir::isMeshAxisGroup(dist.mesh(), dist.namedGroups(), in.loopDomain.group)))
      covers.emplace_back(0, world - 1);
    else if (loop && in.loopDomain.isRange && in.loopDomain.lo >= 0 && in.loopDomain.lo <= in.loopDomain.hi &&
             in.loopDomain.hi < world)
      covers.emplace_back(in.loopDomain.lo, in.loopDomain.hi);
    else
      return std::nullopt;
  }
  for (const auto& u : rel.unrelated)
    if (!out.unrelated.insert(u.name).second) return std::nullopt;
  // Each class's template per input: one that covers all its ranks (one
  // that covers only some of them is read per rank).
  for (int64_t cl = 0; cl < dist.numClasses(); ++cl) {
    const auto& rs = dist.classRanks(cl);
    for (size_t i = 0; i < rel.inputs.size(); ++i) {
      auto [lo, hi] = covers[i];
      auto first = std::lower_bound(rs.begin(), rs.end(), lo);
      if (first == rs.end() || *first > hi) continue;  // no rank of the class
      if (rs.front() < lo || rs.back() > hi) return std::nullopt;
      const std::string& name = rel.inputs[i].name;
      if (out.unrelated.count(name) || !out.byClass.emplace(std::make_pair(cl, name), &rel.inputs[i]).second)
        return std::nullopt;
    }
  }
  TypeLookup types;
  types.seq = [&](const std::string& n) -> Result<ir::TensorType> {
    auto v = seq.findValue(n);
    if (!v) return makeError("unknown-tensor", "S has no tensor '" + n + "'");
    return seq.value(*v).type;
  };
  RankSpace ranks = RankSpace::of(dist);
  std::set<std::string> leavesSomewhere;
  size_t used = 0;
  for (int64_t cl = 0; cl < dist.numClasses(); ++cl) {
    const ir::Graph& g = dist.classGraph(cl);
    int64_t r0 = dist.classRanks(cl)[0];
    for (const auto* list : {&g.inputs(), &g.params()})
      for (ir::ValueId v : *list) {
        const std::string& name = g.value(v).name;
        leavesSomewhere.insert(name);
        if (out.unrelated.count(name)) continue;
        auto t = out.byClass.find({cl, name});
        if (t == out.byClass.end()) return std::nullopt;
        ++used;
        auto e = templateAt(*t->second, ranks, r0);
        if (!e.ok()) return std::nullopt;
        auto ty = inferType(**e, types, {});
        if (!ty.ok() || !boundsHoldEverywhere(*t->second->expr, **e, t->second->loopVar, dist, types)) return std::nullopt;
        const ir::TensorType& want = g.value(v).type;
        bool same = ty->shape.size() == want.shape.size();
        for (size_t k = 0; same && k < want.shape.size(); ++k)
          same = !(ty->shape[k].isConcrete() && want.shape[k].isConcrete()) || ty->shape[k] == want.shape[k];
        if (!same) return std::nullopt;
      }
  }
  // Every (class, template) pair names an input of the class.
  if (used != out.byClass.size()) return std::nullopt;
  for (const auto& u : out.unrelated)
    if (!leavesSomewhere.count(u)) return std::nullopt;
  return out;
}

Result<InputInversion> invertInputs(const ir::Graph& seq, const std::vector<CheckedInput>& checked, DistModel& model) {
  TypeLookup types;
  types.seq = [&](const std::string& n) -> Result<ir::TensorType> {
    auto v = seq.findValue(n);
    if (!v) return makeError("unknown-tensor", "S has no tensor '" + n + "'");
    return seq.value(*v).type;
  };
  std::vector<Piece> pieces;
  for (const auto& c : checked) {
    bool inexact = false;
    SP_TRY(decompose(*c.expr, Rel::dist(IntExpr::constant(c.rank), c.name), types, pieces, inexact));
  }
  InputInversion inv;
  std::map<std::string, std::vector<Piece>> bySeq;
  for (auto& p : pieces) bySeq[p.seq].push_back(p);
  std::vector<ir::ValueId> sins = seq.inputs();
  sins.insert(sins.end(), seq.params().begin(), seq.params().end());
  for (ir::ValueId sv : sins) {
    const std::string& name = seq.value(sv).name;
    auto& ps = bySeq[name];
    SeqRel sr;
    // Equal pieces (same S box) become facts; whole pieces are alternatives.
    const auto& shape = seq.value(sv).type.shape;
    auto extent = [&](int64_t d) { return shape[size_t(d)].isConcrete() ? shape[size_t(d)].value() : -1; };
    auto norm = [&](Box b) {  // a range over a whole dim is the dim
      for (auto it = b.begin(); it != b.end();)
        it = it->second == std::pair<int64_t, int64_t>{0, extent(it->first)} ? b.erase(it) : std::next(it);
      return b;
    };
    std::map<Box, std::vector<RelPtr>> byPiece;
    for (const auto& p : ps) byPiece[norm(p.box)].push_back(p.dist);
    for (const auto& [key, ds] : byPiece)
      for (size_t i = 1; i < ds.size(); ++i) addFact(model, ds[0], ds[i]);
    if (auto it = byPiece.find(Box{}); it != byPiece.end()) {
      sr.best = it->second[0];
      sr.alts = it->second;
    }
    // The box `want` rebuilt from pieces: one piece equal to it, else a
    // concat along a dim (`only`, or any) of boxes that tile it, each rebuilt
    // the same way (depth: dims left to cut).
    std::function<RelPtr(const Box&, int64_t, int)> tile = [&](const Box& want, int64_t only, int depth) -> RelPtr {
      if (auto it = byPiece.find(norm(want)); it != byPiece.end()) return it->second[0];
      if (depth == 0) return nullptr;
      for (int64_t d = 0; d < int64_t(shape.size()); ++d) {
        if ((only >= 0 && d != only) || extent(d) < 0) continue;
        auto [lo, hi] = want.count(d) ? want.at(d) : std::pair<int64_t, int64_t>{0, extent(d)};
        // the ranges along d of the pieces inside `want` on the other dims
        std::set<std::pair<int64_t, int64_t>> ranges;
        for (const auto& [box, ds] : byPiece) {
          bool inside = true;
          for (const auto& [k, r] : want)
            if (k != d) {
              auto b = box.count(k) ? box.at(k) : std::pair<int64_t, int64_t>{0, extent(k)};
              inside = inside && b.first >= r.first && b.second <= r.second;
            }
          if (!inside) continue;
          auto b = box.count(d) ? box.at(d) : std::pair<int64_t, int64_t>{0, extent(d)};
          if (b.first >= lo && b.second <= hi && b != std::pair{lo, hi}) ranges.insert(b);
        }
        std::vector<RelPtr> parts;
        int64_t pos = lo;
        while (pos < hi) {
          RelPtr part;
          int64_t end = -1;
          for (auto [a, z] : ranges) {  // the longest range from pos that rebuilds
            if (a != pos || z <= end) continue;
            Box sub = want;
            sub[d] = {a, z};
            if (RelPtr r = tile(sub, -1, depth - 1)) part = r, end = z;
          }
          if (!part) break;
          parts.push_back(part);
          pos = end;
        }
        if (pos == hi && parts.size() > 1) return Rel::concat(d, parts);
      }
      return nullptr;
    };
    for (int64_t d = 0; d < int64_t(shape.size()); ++d) {
      RelPtr c = tile(Box{}, d, int(shape.size()));
      if (!c) continue;
      if (!sr.best) sr.best = c;
      else addFact(model, sr.best, c);
      sr.alts.push_back(c);
    }
    if (sr.best)
      inv.seq[name] = sr;
    else
      inv.missing[name] = ps.empty() ? "no D input is related to it" : "the D inputs related to it do not tile it";
  }
  return inv;
}

}  // namespace sp::rewrite

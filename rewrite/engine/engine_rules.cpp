// Lemmas as e-graph rewrites: matching lemma patterns (rank-relative dims,
// IR attributes completed with their defaults), the well-formedness the
// proofs assume, side conditions (concrete, or through Z3 when shapes are
// symbolic), proven-rank limits, instantiation and saturation.
#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <iterator>
#include <limits>
#include <map>
#include <set>

#include "rewrite/engine/engine.h"
#include "rewrite/smt/smt.h"

namespace sp::rewrite {

namespace {

void tensorVars(const Pattern& p, std::set<std::string>& out) {
  if (p.op == PatOp::Var) out.insert(p.name);
  for (const auto& a : p.args) tensorVars(*a, out);
}

}  // namespace

namespace {
bool onlyDropoutIr(const Pattern& p) {
  if ((p.op == PatOp::Ir && p.irOp != ir::OpKind::Dropout) || p.op == PatOp::OpVar) return false;
  return std::all_of(p.args.begin(), p.args.end(), [](const PatPtr& a) { return onlyDropoutIr(*a); });
}
}  // namespace

namespace {

// p with the variables of m replaced (a replacement is not looked into)
// and op variables' declarations dropped: two patterns are the same term
// when their copies print alike.
PatPtr substPattern(const PatPtr& p, const std::map<std::string, PatPtr>& m) {
  if (p->op == PatOp::Var) {
    auto it = m.find(p->name);
    return it != m.end() ? it->second : p;
  }
  auto q = std::make_shared<Pattern>(*p);
  q->declares = false;
  for (auto& a : q->args) a = substPattern(a, m);
  return q;
}

bool hasComputedAttr(const Pattern& p) {
  for (const auto& a : p.attrs)
    if (a.kind == PatAttr::Kind::Expr || a.kind == PatAttr::Kind::Recip) return true;
  return std::any_of(p.args.begin(), p.args.end(), [](const PatPtr& a) { return hasComputedAttr(*a); });
}

void countVars(const Pattern& p, std::map<std::string, int>& n) {
  if (p.op == PatOp::Var) ++n[p.name];
  for (const auto& a : p.args) countVars(*a, n);
}

// The concats of two variables in a left side (the cuts a lifted rule
// takes n-ary).
void cutsOf(const Pattern& p, std::vector<const Pattern*>& out) {
  if (p.op == PatOp::Concat && p.args.size() == 2 && p.args[0]->op == PatOp::Var && p.args[1]->op == PatOp::Var &&
      p.args[0]->name != p.args[1]->name)
    out.push_back(&p);
  for (const auto& a : p.args) cutsOf(*a, out);
}

// Rule::Lift of a lemma, where it has that form: the right side concat
// (along a literal or variable dim) or sum of two terms, T[?a_i] and
// T[?b_i], with T[concat(?a_i, ?b_i)] the left side, each ?a_i and ?b_i
// occurring once on the left and no ?b_i in T[?a_i].
std::optional<Rule::Lift> liftOf(const Lemma& l) {
  const Pattern& rhs = *l.rhs;
  // An IR add of the two terms lifts to their sum where the terms have the
  // add's type (add-is-sum: no broadcast), checked when built.
  const bool add = rhs.op == PatOp::Ir && rhs.irOp == ir::OpKind::Add && rhs.attrs.empty();
  if ((rhs.op != PatOp::Concat && rhs.op != PatOp::Sum && !add) || rhs.args.size() != 2) return std::nullopt;
  if (rhs.op == PatOp::Concat) {
    const PatAttr* d = rhs.attr("dim");
    if (!d || (d->kind != PatAttr::Kind::Int && d->kind != PatAttr::Kind::Var)) return std::nullopt;
  }
  if (hasComputedAttr(*l.lhs) || hasComputedAttr(rhs)) return std::nullopt;
  Rule::Lift lift;
  cutsOf(*l.lhs, lift.cuts);
  if (lift.cuts.empty()) return std::nullopt;
  std::map<std::string, int> onLeft, inPart;
  countVars(*l.lhs, onLeft);
  countVars(*rhs.args[0], inPart);
  std::map<std::string, PatPtr> toB, toCut;
  for (const Pattern* c : lift.cuts) {
    const std::string &a = c->args[0]->name, &b = c->args[1]->name;
    if (onLeft[a] != 1 || onLeft[b] != 1 || inPart.count(b)) return std::nullopt;
    lift.a.push_back(a);
    lift.b.push_back(b);
    toB[a] = c->args[1];
    toCut[a] = std::make_shared<Pattern>(*c);
  }
  const std::map<std::string, PatPtr> none;
  if (substPattern(rhs.args[0], toB)->str() != substPattern(rhs.args[1], none)->str()) return std::nullopt;
  if (substPattern(rhs.args[0], toCut)->str() != substPattern(l.lhs, none)->str()) return std::nullopt;
  lift.part = rhs.args[0].get();
  return lift;
}

}  // namespace

std::vector<Rule> compileRules(const LemmaLibrary& lib, const std::vector<LemmaStatus>& status) {
  std::map<std::string, const LemmaStatus*> byName;
  for (const auto& s : status) byName[s.name] = &s;
  std::vector<Rule> out;
  for (const auto& l : lib.lemmas) {
    auto it = byName.find(l.name);
    if (it == byName.end() || !it->second->proven) continue;  // unproven lemmas are never used
    Rule r;
    r.lemma = &l;
    for (const auto& c : l.conds) {
      if (c.op != CmpOp::Eq) continue;
      if (c.lhs.kind == CondTerm::Kind::Rank && c.rhs.kind == CondTerm::Kind::Const) r.fixedRanks[c.lhs.var] = int(c.rhs.value);
      if (c.rhs.kind == CondTerm::Kind::Rank && c.lhs.kind == CondTerm::Kind::Const) r.fixedRanks[c.rhs.var] = int(c.lhs.value);
    }
    r.ranks = it->second->ranks;
    // General: some variable has the default rank, so the proven ranks
    // (possibly none) limit the matches; decided by the lemma, not the status.
    std::set<std::string> vars;
    tensorVars(*l.lhs, vars);
    for (const auto& v : vars) r.general = r.general || !r.fixedRanks.count(v);
    // A dropout lemma is proven for an uninterpreted function of the input
    // and stream elements at the same index, so for every such function;
    // the mask (stream >= ratio, docs/ops.md) is one. A lemma whose only IR
    // ops are dropouts, rooted at one, therefore also holds with every
    // dropout read as its mask output: that reading is a rule of its own.
    bool maskToo = l.lhs->op == PatOp::Ir && l.lhs->irOp == ir::OpKind::Dropout && onlyDropoutIr(*l.lhs) &&
                   onlyDropoutIr(*l.rhs);
    r.lift = liftOf(l);
    out.push_back(r);
    if (maskToo) {
      r.dropoutOut = 1;
      out.push_back(std::move(r));
    }
  }
  return out;
}

namespace {

// Numpy broadcasting as the IR types it (ir/infer.cpp): aligned from the
// right, each dim pair equal or one of them 1.
bool broadcasts(const ir::Shape& a, const ir::Shape& b) {
  const ir::Dim one(1);
  for (size_t k = 1; k <= std::min(a.size(), b.size()); ++k) {
    const ir::Dim& x = a[a.size() - k];
    const ir::Dim& y = b[b.size() - k];
    if (!(x == y || x == one || y == one)) return false;
  }
  return true;
}

struct Bind {
  std::map<std::string, ClassId> t;
  std::map<std::string, int64_t> i;  // slice bounds; scale factors and IR float attributes as bits
  std::map<std::string, ClassId> c;  // const(value=?v): the first class matched, reused on the right side
  // Op variables: the matched IR op and its interned attributes (the same
  // op and attributes on the right side and at later left-side uses).
  std::map<std::string, std::pair<ir::OpKind, int64_t>> ops;
  // A lifted rule's cuts (Rule::Lift): the dim and parts of the concat
  // each matched.
  std::map<const Pattern*, std::pair<int64_t, std::vector<ClassId>>> parts;
};

bool hasVarAttr(const Pattern& p) {
  for (const auto& a : p.attrs)
    if (a.kind == PatAttr::Kind::Var) return true;
  return false;
}

}  // namespace

struct RuleMatcher {
  Engine& e;
  const EGraph& g;
  int dropoutOut = 0;  // the rule being matched or built: Rule::dropoutOut
  mutable int64_t visited = 0;  // e-nodes matching has looked at (search work)
  const Rule::Lift* lift = nullptr;  // the rule being matched: its cuts match n-ary

  int outIndexOf(const Pattern& p) const { return p.irOp == ir::OpKind::Dropout ? dropoutOut : 0; }

  int64_t rankOf(ClassId c) const { return int64_t(g.type(c).shape.size()); }

  // The literal attributes of an IR pattern node, plus its variable float
  // attributes (dropout's ratio=?p) at their values in `b`, when given.
  static ir::AttrMap patAttrs(const Pattern& p, const Bind* b = nullptr) {
    ir::AttrMap m;
    for (const auto& a : p.attrs) {
      if (a.kind == PatAttr::Kind::Var && b && b->i.count(a.text)) {
        if (a.list) m[a.name] = std::vector<int64_t>{b->i.at(a.text)};  // axes=[?e]
        else if (isDimVarAttr(p, a)) m[a.name] = b->i.at(a.text);     // a norm's axis=?e
        else m[a.name] = std::bit_cast<double>(b->i.at(a.text));
        continue;
      }
      switch (a.kind) {
        case PatAttr::Kind::Int: m[a.name] = a.i; break;
        case PatAttr::Kind::Float: m[a.name] = a.f; break;
        case PatAttr::Kind::Ints: m[a.name] = a.ints; break;
        case PatAttr::Kind::Str: {  // a dtype attribute (cast's to) is written as its name
          const ir::AttrSpec* s = p.op == PatOp::Ir ? ir::opInfo(p.irOp).attr(a.name) : nullptr;
          auto dt = s && s->kind == ir::AttrKind::Type ? ir::parseDType(a.text) : std::nullopt;
          if (dt) m[a.name] = *dt;
          else m[a.name] = a.text;
          break;
        }
        case PatAttr::Kind::Var: case PatAttr::Kind::Expr: case PatAttr::Kind::Recip: break;
      }
    }
    return m;
  }

  bool bindInt(const PatAttr* a, int64_t v, Bind& b) const {
    if (!a) return false;
    if (a->kind == PatAttr::Kind::Var) {
      auto [it, fresh] = b.i.emplace(a->text, v);
      return fresh || it->second == v;
    }
    if (a->kind == PatAttr::Kind::Float) return std::bit_cast<int64_t>(a->f) == v;
    return a->i == v;
  }

  // The well-formedness the prover assumes of the left side (docs/lemmas.md):
  // exactly the IR's typing. Binary ops broadcast (numpy), matmul is numpy's
  // (rank >= 1, batch dims broadcast), norm weights are rank <= 1 and
  // broadcast to the normalized row. Every IR node in the e-graph was typed
  // by the IR when added and classes never change type, so this re-checks
  // an invariant; it must never accept more than the IR does.
  bool wellFormed(ir::OpKind op, const std::vector<ClassId>& kids) const {
    const auto& info = ir::opInfo(op);
    if (info.category == ir::OpCategory::Binary)
      return kids.size() == 2 && broadcasts(g.type(kids[0]).shape, g.type(kids[1]).shape);
    if (op == ir::OpKind::MatMul) {
      const auto& a = g.type(kids[0]).shape;
      const auto& b = g.type(kids[1]).shape;
      if (a.empty() || b.empty()) return false;
      if (a.back() != (b.size() == 1 ? b[0] : b[b.size() - 2])) return false;
      ir::Shape ba(a.begin(), a.end() - std::min<long>(2, long(a.size())));
      ir::Shape bb(b.begin(), b.end() - std::min<long>(2, long(b.size())));
      return broadcasts(ba, bb);
    }
    if (info.category == ir::OpCategory::Norm)
      for (size_t k = 1; k < kids.size(); ++k)
        if (g.type(kids[k]).shape.size() > 1) return false;
    return true;
  }

  // The integer value of a rank-0 constant node: an IR constant in the
  // e-graph, or a D leaf whose producer is a constant. nullopt otherwise (or
  // when the value is not an integer).
  std::optional<int64_t> constValue(const ENode& n) const {
    const ir::AttrMap* attrs = nullptr;
    if (n.op == int32_t(ir::OpKind::Constant) && n.data[1] == 0) attrs = &e.in_.attrMap(n.data[0]);
    if (n.op == kOpDist) {
      const ir::Graph& rg = e.dist_.rank(n.data[0]);
      const ir::Value& v = rg.value(ir::ValueId(n.data[1]));
      if (v.producer >= 0 && rg.node(v.producer).op == ir::OpKind::Constant) attrs = &rg.node(v.producer).attrs;
    }
    if (!attrs || !attrs->count("value")) return std::nullopt;
    const ir::Tensor& t = ir::attrTensor(*attrs, "value");
    if (t.rank() != 0 || t.numel() != 1) return std::nullopt;
    double x = t.getAsDouble(0);
    if (!(std::abs(x) < 1e15) || x != std::floor(x)) return std::nullopt;
    return int64_t(x);
  }

  // The interned attribute id of an IR pattern node at an input rank (its
  // attributes completed with the IR defaults); nullopt when they do not
  // complete. Cached: the same for every node matched in one round.
  mutable std::map<std::pair<const Pattern*, int64_t>, std::optional<int64_t>> irAttrIds;
  // Matches kept per root class and rule (a class holding many equal
  // forms, each matching a nested pattern, multiplies them): past it the
  // rest are dropped, equalities left unfound, never a wrong one.
  size_t cap = std::numeric_limits<size_t>::max();
  std::optional<int64_t> irAttrId(const Pattern& p, int64_t inRank) const {
    auto key = std::make_pair(&p, inRank);
    if (auto it = irAttrIds.find(key); it != irAttrIds.end()) return it->second;
    std::optional<int64_t> id;
    if (auto full = ir::completeAttrs(p.irOp, patAttrs(p)); full.ok()) id = e.in_.attrs(p.irOp, *full, inRank);
    irAttrIds.emplace(key, id);
    return id;
  }

  // A necessary condition for `match` to accept node n for pattern p (the
  // op test of each case below), checked before copying the bindings.
  static bool opMayMatch(const Pattern& p, const ENode& n) {
    switch (p.op) {
      case PatOp::Concat: return n.op == kOpConcat;
      case PatOp::Sum: return n.op == kOpSum;
      case PatOp::Slice: return n.op == kOpSlice;
      case PatOp::Scale: return n.op == kOpScale;
      case PatOp::Permute: return n.op == kOpPermute;
      case PatOp::SplitLast: case PatOp::MergeLast: case PatOp::MergeDims: case PatOp::SplitDims:
        return n.op == int32_t(ir::OpKind::Reshape) || n.op == kOpReshape;
      case PatOp::Ir: return n.op == int32_t(p.irOp);
      case PatOp::OpVar: return !isRelOp(n.op) && n.op >= 0 && size_t(n.op) < ir::kNumOps;
      case PatOp::Const: case PatOp::Var: return true;
    }
    return true;
  }

  // The dim of a concat or slice node (normalized) against the pattern's: a
  // literal (negative from the end) or a variable bound to it.
  bool dimMatches(const Pattern& p, ClassId c, int64_t dim, Bind& b) const {
    const PatAttr* a = p.attr("dim");
    if (a->kind == PatAttr::Kind::Var) return bindInt(a, dim, b);
    return normDim(a->i, rankOf(c)) == dim;
  }

  void match(const Pattern& p, ClassId c, Bind b, std::vector<Bind>& out) const {
    c = g.find(c);
    if (p.op == PatOp::Var) {
      auto [it, fresh] = b.t.emplace(p.name, c);
      if (fresh || g.find(it->second) == c) out.push_back(std::move(b));
      return;
    }
    if (p.op == PatOp::Const) {  // one binding per class (its constant nodes and leaves agree)
      for (const ENode& n : g.nodes(c))
        if (auto v = constValue(n)) {
          const PatAttr* a = p.attr("value");
          if (!bindInt(a, *v, b)) return;
          if (a->kind == PatAttr::Kind::Var) b.c.emplace(a->text, c);
          out.push_back(std::move(b));
          return;
        }
      return;
    }
    // Matching only reads the e-graph, so the class's nodes are not copied.
    visited += int64_t(g.nodes(c).size());
    if (p.op == PatOp::Concat && lift) {
      auto at = std::find(lift->cuts.begin(), lift->cuts.end(), &p);
      if (at != lift->cuts.end()) {
        matchCut(p, size_t(at - lift->cuts.begin()), c, std::move(b), out);
        return;
      }
    }
    for (const ENode& n : g.nodes(c)) {
      if (out.size() >= cap) return;
      if (n.kids.size() != p.args.size() || !opMayMatch(p, n)) continue;
      Bind nb = b;
      bool ok = false;
      switch (p.op) {
        case PatOp::Concat: ok = n.op == kOpConcat && dimMatches(p, c, n.data[0], nb); break;
        case PatOp::Sum: ok = n.op == kOpSum; break;
        case PatOp::Slice:
          ok = n.op == kOpSlice && dimMatches(p, c, n.data[0], nb) &&
               bindInt(p.attr("start"), n.data[1], nb) && bindInt(p.attr("end"), n.data[2], nb);
          break;
        case PatOp::Scale: ok = n.op == kOpScale && bindInt(p.attr("factor"), n.data[0], nb); break;
        case PatOp::Permute: ok = n.op == kOpPermute && p.attr("perm") && p.attr("perm")->ints == n.data; break;
        case PatOp::SplitLast: case PatOp::MergeLast: {
          // A row-major reshape is determined by its output shape: match IR
          // and relation reshape nodes whose shapes split/merge the last dim.
          bool irReshape = n.op == int32_t(ir::OpKind::Reshape) && n.data.size() == 2 && n.data[1] == 0;
          if (!(irReshape || n.op == kOpReshape) || n.kids.size() != 1) break;
          const ir::Shape& in = g.type(n.kids[0]).shape;
          const ir::Shape& os = g.type(c).shape;
          const ir::Shape& big = p.op == PatOp::SplitLast ? os : in;    // [..., H, k]
          const ir::Shape& small = p.op == PatOp::SplitLast ? in : os;  // [..., H*k]
          if (small.empty() || big.size() != small.size() + 1) break;
          bool lead = true;
          for (size_t d = 0; d + 1 < small.size(); ++d) lead = lead && small[d] == big[d];
          const ir::Dim &h = big[big.size() - 2], &k = big.back(), &m = small.back();
          if (!lead || !h.isConcrete() || !k.isConcrete() || !m.isConcrete() || k.value() < 1 ||
              h.value() * k.value() != m.value())
            break;
          ok = bindInt(p.attr("size"), k.value(), nb);
          break;
        }
        case PatOp::MergeDims: case PatOp::SplitDims: {
          // A reshape [..., A, k, ...] <-> [..., A*k, ...] merging dims d, d+1
          // (split: the same with input and output exchanged; d counts in
          // the pattern operand's rank).
          bool irReshape = n.op == int32_t(ir::OpKind::Reshape) && n.data.size() == 2 && n.data[1] == 0;
          if (!(irReshape || n.op == kOpReshape) || n.kids.size() != 1) break;
          bool merge = p.op == PatOp::MergeDims;
          const ir::Shape& in = merge ? g.type(n.kids[0]).shape : g.type(c).shape;   // the split side
          const ir::Shape& os = merge ? g.type(c).shape : g.type(n.kids[0]).shape;   // the merged side
          int64_t d = normDim(p.attr("dim")->i, int64_t(merge ? in.size() : os.size()));
          if (in.size() != os.size() + 1 || d < 0 || d + 1 >= int64_t(in.size())) break;
          bool same = true;
          for (size_t q = 0; q < os.size(); ++q)
            if (int64_t(q) != d) same = same && os[q] == in[q < size_t(d) ? q : q + 1];
          const ir::Dim &a = in[size_t(d)], &k = in[size_t(d) + 1], &m = os[size_t(d)];
          if (!same || !a.isConcrete() || !k.isConcrete() || !m.isConcrete() || k.value() < 1 ||
              a.value() * k.value() != m.value())
            break;
          ok = bindInt(p.attr("size"), k.value(), nb);
          break;
        }
        case PatOp::Ir: {
          if (n.op != int32_t(p.irOp) || n.data[1] != outIndexOf(p)) break;
          int64_t inRank = n.kids.empty() ? 0 : rankOf(n.kids[0]);
          std::optional<int64_t> id;
          if (!hasVarAttr(p)) {
            id = irAttrId(p, inRank);
          } else {  // bind each variable float attribute to the node's value, then compare the whole
            const ir::AttrMap& have = e.in_.attrMap(n.data[0]);
            bool bound = true;
            for (const auto& a : p.attrs) {
              if (a.kind != PatAttr::Kind::Var) continue;
              auto it = have.find(a.name);
              if (a.list) {  // axes=[?e]: one axis, counted from 0 like a concat's dim
                const auto* v = it != have.end() ? std::get_if<std::vector<int64_t>>(&it->second) : nullptr;
                int64_t ax = v && v->size() == 1 ? normDim((*v)[0], inRank) : -1;
                bound = bound && ax >= 0 && ax < inRank && bindInt(&a, ax, nb);
                continue;
              }
              if (isDimVarAttr(p, a)) {  // a norm's axis=?e, counted from 0
                const auto* v = it != have.end() ? std::get_if<int64_t>(&it->second) : nullptr;
                int64_t ax = v ? normDim(*v, inRank) : -1;
                bound = bound && ax >= 0 && ax < inRank && bindInt(&a, ax, nb);
                continue;
              }
              bound = bound && it != have.end() && std::holds_alternative<double>(it->second) &&
                      bindInt(&a, std::bit_cast<int64_t>(std::get<double>(it->second)), nb);
            }
            if (bound)
              if (auto full = ir::completeAttrs(p.irOp, patAttrs(p, &nb)); full.ok()) id = e.in_.attrs(p.irOp, *full, inRank);
          }
          ok = id && *id == n.data[0] && wellFormed(p.irOp, n.kids);
          break;
        }
        case PatOp::OpVar: {
          // Only ops whose ops.def category really is the trait; a later
          // use must be the same op with the same attributes.
          auto k = ir::OpKind(n.op);
          if (!opHasTrait(k, p.trait) || n.data[1] != 0 || !wellFormed(k, n.kids)) break;
          auto [it, fresh] = nb.ops.emplace(p.name, std::make_pair(k, n.data[0]));
          if (fresh || it->second == std::make_pair(k, n.data[0])) { ok = true; break; }
          if (it->second.first != k) break;
          ir::AttrMap prev = e.in_.attrMap(it->second.second);  // the same attributes, interned at this node's rank
          ok = e.in_.attrs(k, prev, n.kids.empty() ? 0 : rankOf(n.kids[0])) == n.data[0];
          break;
        }
        case PatOp::Const: case PatOp::Var: break;
      }
      if (!ok) continue;
      // A binary sum is matched in both orders when the pattern needs
      // structure in a child (its children are stored sorted by class: sum
      // is commutative, EGraph::setCommutative). Against bare variables
      // the stored order is the one pairing tried: the swapped binding only
      // permutes a multiset, and pairing two sums both ways (add-of-sums)
      // would build every cross pairing of their parts.
      bool structured = std::any_of(p.args.begin(), p.args.end(), [](const PatPtr& a) { return a->op != PatOp::Var; });
      bool both = structured && n.kids.size() == 2 && g.isCommutative(n.op) && g.find(n.kids[0]) != g.find(n.kids[1]);
      for (int order = 0; order < (both ? 2 : 1); ++order) {
        std::vector<Bind> partial{nb};
        for (size_t k = 0; k < p.args.size() && !partial.empty(); ++k) {
          std::vector<Bind> next;
          for (auto& pb : partial) {
            if (next.size() >= cap) break;
            match(*p.args[k], n.kids[order ? 1 - k : k], std::move(pb), next);
          }
          partial = std::move(next);
        }
        for (auto& pb : partial) out.push_back(std::move(pb));
      }
    }
  }

  // The parts of class c along dim: the longest of its concats along dim,
  // each part taken apart the same way, recursively (a left-nested chain
  // before associativity flattened it is its leaves); {c} where it has
  // none. One flattening suffices: a zip with a coarser one meets it at
  // their shared cut points, and a hit that does not apply falls back to
  // the binary matches (applyRules). Types only narrow into parts, so the
  // recursion ends; matching reads a fixed e-graph, so one memo serves the
  // round.
  mutable std::map<std::pair<ClassId, int64_t>, std::vector<ClassId>> flatMemo;
  const std::vector<ClassId>& flatParts(ClassId c, int64_t dim) const {
    c = g.find(c);
    if (auto it = flatMemo.find({c, dim}); it != flatMemo.end()) return it->second;
    std::vector<ClassId> best{c};
    for (const ENode& n : g.nodes(c)) {
      if (n.op != kOpConcat || n.data[0] != dim) continue;
      std::vector<ClassId> parts;
      for (ClassId k : n.kids) {
        const auto& kp = flatParts(k, dim);  // std::map: references stay valid
        parts.insert(parts.end(), kp.begin(), kp.end());
      }
      if (parts.size() > best.size()) best = std::move(parts);
    }
    return flatMemo[{c, dim}] = std::move(best);
  }

  // A lifted rule's cut i against class c: the flattening of its concats
  // along each dim the pattern takes (the n parts of a chain, however
  // nested or viewed), with the cut's variables bound to the first two
  // parts and all parts kept for buildLifted.
  void matchCut(const Pattern& p, size_t i, ClassId c, Bind b, std::vector<Bind>& out) const {
    std::set<int64_t> dims;
    for (const ENode& n : g.nodes(c))
      if (n.op == kOpConcat) dims.insert(n.data[0]);
    for (int64_t d : dims) {
      Bind db = b;
      if (!dimMatches(p, c, d, db)) continue;
      if (out.size() >= cap) return;
      const std::vector<ClassId>& parts = flatParts(c, d);
      if (parts.size() < 2) continue;
      auto [ia, freshA] = db.t.emplace(lift->a[i], parts[0]);
      auto [ib, freshB] = db.t.emplace(lift->b[i], parts[1]);
      if (!freshA || !freshB) continue;  // each occurs once on the left
      db.parts[&p] = {d, parts};
      out.push_back(std::move(db));
    }
  }

  // A size or shape of a cut's part in a condition term.
  static bool onParts(const CondTerm& t, const Rule::Lift& lf) {
    if ((t.kind == CondTerm::Kind::Size || t.kind == CondTerm::Kind::Shape) &&
        (std::find(lf.a.begin(), lf.a.end(), t.var) != lf.a.end() || std::find(lf.b.begin(), lf.b.end(), t.var) != lf.b.end()))
      return true;
    return std::any_of(t.args.begin(), t.args.end(), [&](const CondTerm& a) { return onParts(a, lf); });
  }

  // The right side of a lifted rule for the parts its cuts matched: the
  // parts regrouped at the cut points every cut shares (a concat of four
  // pieces against one of two: its halves), then, for each group j, the
  // lemma's step at group j against the concat of the groups after it
  // (its conditions and proven ranks checked there) and the image T[group
  // j]; the concat (or sum) of the images. nullopt where a step fails.
  // mayFallBack: where nothing applies, whether the binary matches could
  // (a step's condition on the sizes or shapes of the cut's parts fails,
  // which a coarser cut may meet; not a condition on the other operands,
  // nor cuts that share no cut point).
  std::optional<ClassId> buildLifted(const Rule& r, const Bind& b, bool& mayFallBack) {
    mayFallBack = false;
    const Rule::Lift& lf = *r.lift;
    const size_t k = lf.cuts.size();
    std::vector<int64_t> dims(k);
    std::vector<std::vector<std::vector<ClassId>>> groups(k);  // [cut][group]: parts
    std::vector<std::vector<int64_t>> ends(k);
    bool concrete = true;
    for (size_t i = 0; i < k; ++i) {
      const auto& [d, parts] = b.parts.at(lf.cuts[i]);
      dims[i] = d;
      int64_t at = 0;
      for (ClassId x : parts) {
        const ir::Dim& e = g.type(x).shape.at(size_t(d));
        concrete = concrete && e.isConcrete();
        at += concrete ? e.value() : 0;
        ends[i].push_back(at);
      }
    }
    if (concrete) {
      std::vector<int64_t> common = ends[0];
      for (size_t i = 1; i < k; ++i) {
        if (ends[i].back() != common.back()) return std::nullopt;
        std::vector<int64_t> both;
        std::set_intersection(common.begin(), common.end(), ends[i].begin(), ends[i].end(), std::back_inserter(both));
        common = std::move(both);
      }
      for (size_t i = 0; i < k; ++i) {
        const auto& parts = b.parts.at(lf.cuts[i]).second;
        std::vector<ClassId> cur;
        for (size_t j = 0, q = 0; j < parts.size(); ++j) {
          cur.push_back(parts[j]);
          if (ends[i][j] == common[q]) {
            groups[i].push_back(std::move(cur));
            cur.clear();
            ++q;
          }
        }
      }
    } else {  // symbolic extents: the parts as they are (the conditions check that they align)
      for (size_t i = 0; i < k; ++i) {
        const auto& parts = b.parts.at(lf.cuts[i]).second;
        if (parts.size() != b.parts.at(lf.cuts[0]).second.size()) return std::nullopt;
        for (ClassId x : parts) groups[i].push_back({x});
      }
    }
    const size_t n = groups[0].size();
    if (n < 2) return std::nullopt;
    auto piece = [&](size_t i, size_t lo, size_t hi) -> std::optional<ClassId> {  // groups lo..hi-1 of cut i
      std::vector<ClassId> xs;
      for (size_t j = lo; j < hi; ++j) xs.insert(xs.end(), groups[i][j].begin(), groups[i][j].end());
      if (xs.size() == 1) return g.find(xs[0]);
      return e.concat(dims[i], xs);
    };
    std::vector<ClassId> images;
    for (size_t j = 0; j < n; ++j) {
      Bind s = b;
      for (size_t i = 0; i < k; ++i) {
        auto at = piece(i, j, j + 1);
        if (!at) return std::nullopt;
        s.t[lf.a[i]] = *at;
        if (j + 1 == n) continue;
        auto rest = piece(i, j + 1, n);
        if (!rest) return std::nullopt;
        s.t[lf.b[i]] = *rest;
      }
      if (j + 1 < n && !ranksCovered(r, s)) {
        mayFallBack = true;
        return std::nullopt;
      }
      const Cond* failed = nullptr;
      if (j + 1 < n && !conditions(r, s, &failed)) {
        mayFallBack = failed && (onParts(failed->lhs, lf) || onParts(failed->rhs, lf));
        return std::nullopt;
      }
      auto img = build(*lf.part, s);
      if (!img) {
        mayFallBack = true;
        return std::nullopt;
      }
      images.push_back(*img);
    }
    const Pattern& rhs = *r.lemma->rhs;
    if (rhs.op == PatOp::Ir) {  // an add of terms of one type is their sum (add-is-sum); else the binary matches
      auto sum = e.sum(images);
      if (!sum) mayFallBack = true;
      return sum;
    }
    if (rhs.op == PatOp::Sum) return e.sum(images);
    const PatAttr* a = rhs.attr("dim");
    return e.concat(a->kind == PatAttr::Kind::Var ? b.i.at(a->text) : a->i, images);
  }

  // Proven-rank limits. The prover gives every default-rank variable every
  // rank 1..maxRank independently and a lemma is proven only when each of
  // those assignments is proven or cannot be well typed; so a match is
  // covered when every default-rank variable has one of the proven ranks
  // (fixed ranks are conditions, checked below). Proofs also assume every
  // size of a variable is >= 1 (symbolic sizes are assumed so by the SMT
  // side conditions): a concrete empty dim is not covered.
  bool ranksCovered(const Rule& r, const Bind& b) const {
    for (const auto& [name, c] : b.t) {
      for (const ir::Dim& d : g.type(c).shape)
        if (d.isConcrete() && d.value() < 1) return false;
      if (!r.general || r.fixedRanks.count(name)) continue;
      int64_t k = rankOf(c);
      if (std::find(r.ranks.begin(), r.ranks.end(), int(k)) == r.ranks.end()) return false;
    }
    return true;
  }

  // Integer value of a condition term: concrete, or a Z3 term when a size
  // is symbolic (a monomial coef*sym... becomes coef * an Int variable named
  // by the symbol product, >= 1; treating products as opaque only weakens
  // the assumptions, so a proof stays sound).
  struct Val {
    std::optional<int64_t> c;
    smt::Term t;
  };
  Val dimVal(const ir::Dim& d, smt::Context* z, std::vector<smt::Term>& assume) const {
    if (d.isConcrete()) return {d.value(), {}};
    if (!z) return {std::nullopt, {}};
    std::string name;
    for (const auto& s : d.syms) name += (name.empty() ? "" : "*") + s;
    smt::Term v = z->intVar("sym." + name);
    assume.push_back(z->ge(v, z->intVal(1)));
    return {std::nullopt, z->mulConst(v, d.coef)};
  }
  std::optional<Val> term(const CondTerm& t, const Bind& b, smt::Context* z, std::vector<smt::Term>& assume) const {
    switch (t.kind) {
      case CondTerm::Kind::Const: return Val{t.value, {}};
      case CondTerm::Kind::Var: {
        auto it = b.i.find(t.var);
        if (it == b.i.end()) return std::nullopt;
        return Val{it->second, {}};
      }
      case CondTerm::Kind::Rank: {
        auto it = b.t.find(t.var);
        if (it == b.t.end()) return std::nullopt;
        return Val{rankOf(it->second), {}};
      }
      case CondTerm::Kind::Shape: return std::nullopt;  // compared in conditions()
      case CondTerm::Kind::Size: {
        auto it = b.t.find(t.var);
        if (it == b.t.end()) return std::nullopt;
        int64_t r = rankOf(it->second), d = t.value;
        if (!t.args.empty()) {  // a computed dim: concrete, in range, never counted from the end
          auto v = term(t.args[0], b, nullptr, assume);
          if (!v || !v->c || *v->c < 0 || *v->c >= r) return std::nullopt;
          Val s = dimVal(g.type(it->second).shape[size_t(*v->c)], z, assume);
          if (!s.c && !s.t.valid()) return std::nullopt;
          return s;
        }
        if (!t.dimVar.empty()) {
          auto dv = b.i.find(t.dimVar);
          if (dv == b.i.end()) return std::nullopt;
          d = dv->second;
        }
        d = normDim(d, r);
        if (d < 0 || d >= r) return std::nullopt;
        Val v = dimVal(g.type(it->second).shape[size_t(d)], z, assume);
        if (!v.c && !v.t.valid()) return std::nullopt;
        return v;
      }
      default: {
        auto x = term(t.args[0], b, z, assume), y = term(t.args[1], b, z, assume);
        if (!x || !y) return std::nullopt;
        if (x->c && y->c) {
          if (t.kind == CondTerm::Kind::Mod) {
            if (*y->c < 1) return std::nullopt;
            return Val{((*x->c % *y->c) + *y->c) % *y->c, {}};
          }
          int64_t r = t.kind == CondTerm::Kind::Add ? *x->c + *y->c : t.kind == CondTerm::Kind::Sub ? *x->c - *y->c : *x->c * *y->c;
          return Val{r, {}};
        }
        if (!z) return std::nullopt;
        smt::Term a = x->c ? z->intVal(*x->c) : x->t, c = y->c ? z->intVal(*y->c) : y->t;
        if (t.kind == CondTerm::Kind::Mul && !x->c && !y->c) return std::nullopt;  // nonlinear
        if (t.kind == CondTerm::Kind::Mod) {
          if (!y->c || *y->c < 1) return std::nullopt;
          return Val{std::nullopt, z->modConst(a, *y->c)};
        }
        return Val{std::nullopt, t.kind == CondTerm::Kind::Add ? z->add(a, c) : t.kind == CondTerm::Kind::Sub ? z->sub(a, c) : z->mul(a, c)};
      }
    }
  }
  static bool cmp(CmpOp op, int64_t a, int64_t b) {
    switch (op) {
      case CmpOp::Eq: return a == b;
      case CmpOp::Ne: return a != b;
      case CmpOp::Lt: return a < b;
      case CmpOp::Le: return a <= b;
      case CmpOp::Gt: return a > b;
      case CmpOp::Ge: return a >= b;
    }
    return false;
  }
  // `failed`: where given, the first condition that does not hold.
  bool conditions(const Rule& r, const Bind& b, const Cond** failed = nullptr) {
    for (const auto& c : r.lemma->conds) {
      if (failed) *failed = &c;
      if (c.lhs.kind == CondTerm::Kind::Shape) {  // shape(?a) == shape(?b): the types' shapes, dim by dim
        auto x = b.t.find(c.lhs.var), y = b.t.find(c.rhs.var);
        if (x == b.t.end() || y == b.t.end()) return false;
        const auto &sx = g.type(x->second).shape, &sy = g.type(y->second).shape;
        const size_t left = size_t(c.lhs.value);  // the last dims left out
        if (sx.size() != sy.size() || sx.size() < left || !std::equal(sx.begin(), sx.end() - long(left), sy.begin()))
          return false;
        continue;
      }
      std::vector<smt::Term> assume;
      auto x = term(c.lhs, b, nullptr, assume), y = term(c.rhs, b, nullptr, assume);
      if (x && y && x->c && y->c) {
        if (!cmp(c.op, *x->c, *y->c)) return false;
        continue;
      }
      // Symbolic sizes: prove the condition with Z3 (linear integer arithmetic).
      if (!e.smt_) e.smt_ = std::make_unique<smt::Context>();
      smt::Context* z = e.smt_.get();
      x = term(c.lhs, b, z, assume);
      y = term(c.rhs, b, z, assume);
      if (!x || !y) return false;
      smt::Term a = x->c ? z->intVal(*x->c) : x->t, d = y->c ? z->intVal(*y->c) : y->t;
      smt::Term goal = c.op == CmpOp::Eq ? z->eq(a, d) : c.op == CmpOp::Ne ? z->ne(a, d) : c.op == CmpOp::Lt ? z->lt(a, d)
                     : c.op == CmpOp::Le ? z->le(a, d) : c.op == CmpOp::Gt ? z->gt(a, d) : z->ge(a, d);
      ++e.stats_.z3Queries;
      if (z->check(assume, goal, {2000}).verdict != smt::Verdict::Proved) return false;
    }
    return true;
  }

  std::optional<ClassId> build(const Pattern& p, const Bind& b) {
    if (p.op == PatOp::Var) return g.find(b.t.at(p.name));
    std::vector<ClassId> kids;
    for (const auto& a : p.args) {
      auto k = build(*a, b);
      if (!k) return std::nullopt;
      kids.push_back(*k);
    }
    auto intAttr = [&](const char* n) -> int64_t {
      const PatAttr* a = p.attr(n);
      if (a->kind == PatAttr::Kind::Expr) {  // concrete sizes only; -1 makes the slice ill typed (no node)
        std::vector<smt::Term> assume;
        auto v = term(*a->expr, b, nullptr, assume);
        return v && v->c ? *v->c : -1;
      }
      return a->kind == PatAttr::Kind::Var ? b.i.at(a->text) : a->i;
    };
    switch (p.op) {
      case PatOp::Concat: {
        int64_t d = intAttr("dim");  // a computed dim must land in range, never counted from the end
        if (p.attr("dim")->kind == PatAttr::Kind::Expr && (d < 0 || kids.empty() || d >= rankOf(kids[0]))) return std::nullopt;
        return e.concat(d, kids);
      }
      case PatOp::Sum: return e.sum(kids);
      case PatOp::Slice: return e.slice(kids[0], intAttr("dim"), intAttr("start"), intAttr("end"));
      case PatOp::Scale: {
        const PatAttr* a = p.attr("factor");
        if (a->kind == PatAttr::Kind::Recip) {
          // 1/n for a concrete n >= 1 whose reciprocal is exact in double (a
          // power of two): factors stay the reals the proofs use.
          std::vector<smt::Term> assume;
          auto v = term(*a->expr, b, nullptr, assume);
          if (!v || !v->c || *v->c < 1 || !std::has_single_bit(uint64_t(*v->c))) return std::nullopt;
          return e.scale(kids[0], 1.0 / double(*v->c));
        }
        double f = a->kind == PatAttr::Kind::Var ? std::bit_cast<double>(b.i.at(a->text))
                 : a->kind == PatAttr::Kind::Float ? a->f : double(a->i);
        return e.scale(kids[0], f);
      }
      case PatOp::Permute: return e.permute(kids[0], p.attr("perm")->ints);
      case PatOp::SplitLast: case PatOp::MergeLast: {
        int64_t k = intAttr("size");
        ir::Shape dims = g.type(kids[0]).shape;  // leading dims may be symbolic; the split/merged ones are concrete
        if (k < 1) return std::nullopt;
        if (p.op == PatOp::SplitLast) {
          if (dims.empty() || !dims.back().isConcrete() || dims.back().value() % k != 0) return std::nullopt;
          dims.back() = ir::Dim(dims.back().value() / k);
          dims.push_back(ir::Dim(k));
        } else {
          if (dims.size() < 2 || dims.back() != ir::Dim(k) || !dims[dims.size() - 2].isConcrete()) return std::nullopt;
          dims.pop_back();
          dims.back() = ir::Dim(dims.back().value() * k);
        }
        return e.irNodeInfer(ir::OpKind::Reshape, {{"shape", dims}}, kids);
      }
      case PatOp::MergeDims: {
        int64_t k = intAttr("size");
        ir::Shape dims = g.type(kids[0]).shape;
        int64_t d = normDim(p.attr("dim")->i, int64_t(dims.size()));
        if (k < 1 || d < 0 || d + 1 >= int64_t(dims.size()) || dims[size_t(d) + 1] != ir::Dim(k) ||
            !dims[size_t(d)].isConcrete())
          return std::nullopt;
        dims[size_t(d)] = ir::Dim(dims[size_t(d)].value() * k);
        dims.erase(dims.begin() + d + 1);
        return e.irNodeInfer(ir::OpKind::Reshape, {{"shape", dims}}, kids);
      }
      case PatOp::SplitDims: {
        int64_t k = intAttr("size");
        ir::Shape dims = g.type(kids[0]).shape;
        int64_t d = normDim(p.attr("dim")->i, int64_t(dims.size()));
        if (k < 1 || d < 0 || d >= int64_t(dims.size()) || !dims[size_t(d)].isConcrete() ||
            dims[size_t(d)].value() % k != 0)
          return std::nullopt;
        dims[size_t(d)] = ir::Dim(dims[size_t(d)].value() / k);
        dims.insert(dims.begin() + d + 1, ir::Dim(k));
        return e.irNodeInfer(ir::OpKind::Reshape, {{"shape", dims}}, kids);
      }
      case PatOp::Ir: return e.irNodeInfer(p.irOp, patAttrs(p, &b), kids, outIndexOf(p));
      case PatOp::OpVar: {  // the op and attributes its declaration matched
        auto it = b.ops.find(p.name);
        if (it == b.ops.end()) return std::nullopt;
        ir::AttrMap attrs = e.in_.attrMap(it->second.second);
        return e.irNodeInfer(it->second.first, attrs, kids);
      }
      case PatOp::Const: {  // the constant the left side matched (the loader allows no other)
        const PatAttr* a = p.attr("value");
        auto it = a->kind == PatAttr::Kind::Var ? b.c.find(a->text) : b.c.end();
        if (it == b.c.end()) return std::nullopt;
        return g.find(it->second);
      }
      case PatOp::Var: break;
    }
    return std::nullopt;
  }
};

constexpr size_t kMaxMatchesPerClass = 4096;

int Engine::applyRules(const std::chrono::steady_clock::time_point& deadline, const Budget& budget) {
  RuleMatcher m{*this, g_, 0, {}};
  struct Hit {
    const Rule* rule;
    ClassId root;
    Bind bind;
  };
  std::vector<Hit> hits;
  const std::vector<ClassId> classes = g_.canonicalClasses();  // matching adds no nodes
  m.cap = kMaxMatchesPerClass;
  for (const Rule& r : rules_) {
    m.dropoutOut = r.dropoutOut;
    m.lift = r.lift ? &*r.lift : nullptr;
    for (size_t ci = 0; ci < classes.size(); ++ci) {
      const ClassId c = classes[ci];
      // Matching one rule over a large e-graph can itself take seconds:
      // the budget is looked at every 256 classes, and no more hits are
      // collected than the node budget could ever apply.
      if ((ci & 255) == 255 && (budget.past(deadline) || hits.size() > budget.nodes)) break;
      std::vector<Bind> found;
      m.match(*r.lemma->lhs, c, Bind{}, found);
      for (auto& b : found)
        if (m.ranksCovered(r, b)) hits.push_back({&r, c, std::move(b)});
    }
    addSearchWork(m.visited);
    m.visited = 0;
    if (budget.past(deadline)) break;
  }
  int changed = 0;
  auto record = [&](const Rule& r, ClassId root, std::optional<ClassId> rhs, size_t before) {
    if (!rhs) return;
    bool merged = g_.find(*rhs) != g_.find(root) && mergeChecked(root, *rhs);
    if (merged || g_.numNodes() != before) {
      ++changed;
      ++stats_.lemmasApplied;
      ++stats_.perLemma[r.lemma->name];
    }
  };
  // A lifted hit that does not apply (a step's condition fails where the
  // lemma holds at a coarser cut, the cuts share no cut point) falls back
  // to the binary matches at its root, once per rule and root and round:
  // lifting only ever saves work.
  std::set<std::pair<const Rule*, ClassId>> fellBack;
  for (auto& h : hits) {
    if (g_.numNodes() > budget.nodes || budget.past(deadline)) break;
    m.dropoutOut = h.rule->dropoutOut;
    size_t before = g_.numNodes();
    if (h.bind.parts.empty()) {
      if (m.conditions(*h.rule, h.bind)) record(*h.rule, h.root, m.build(*h.rule->lemma->rhs, h.bind), before);
      continue;
    }
    bool mayFallBack = false;
    if (auto rhs = m.buildLifted(*h.rule, h.bind, mayFallBack)) {
      // The induction over the parts is C++ (relation semantics: concat
      // and sum are n-ary), so the report lists it with the other steps.
      const int had = changed;
      record(*h.rule, h.root, rhs, before);
      if (changed > had) ++stats_.perLemma["engine:n-ary-lemma"];
      continue;
    }
    if (!mayFallBack || !fellBack.insert({h.rule, g_.find(h.root)}).second) continue;
    std::vector<Bind> binary;
    m.lift = nullptr;
    m.match(*h.rule->lemma->lhs, h.root, Bind{}, binary);
    for (const Bind& b : binary) {
      if (g_.numNodes() > budget.nodes || budget.past(deadline)) break;
      if (!m.ranksCovered(*h.rule, b) || !m.conditions(*h.rule, b)) continue;
      size_t at = g_.numNodes();
      record(*h.rule, h.root, m.build(*h.rule->lemma->rhs, b), at);
    }
  }
  g_.rebuild();
  // The relation-semantics steps written in C++ (docs/lemmas.md): counted
  // under "engine:" names, which the report lists as assumptions.
  // A step starts only within the budget (a step may add many nodes at
  // once: associativity views of a large e-graph went 4x past the node
  // budget in one iteration), and flattenAssoc stops adding past it.
  // Stopping early only leaves equalities unfound.
  overBudget_ = [&] { return g_.numNodes() > budget.nodes || budget.past(deadline); };
  auto step = [&](const char* name, const std::function<int()>& run) {
    if (overBudget_()) return;
    int n = run();
    changed += n;
    if (n > 0) stats_.perLemma[std::string("engine:") + name] += n;
  };
  step("slice-tiling", [&] { return tileSlices(); });
  step("slice-of-concat", [&] { return slicesOfConcats(); });
  step("zero-terms", [&] { return dropZeroTerms(); });
  step("reshape-composition", [&] { return composeReshapes(); });
  step("scale-composition", [&] { return composeScales(); });
  step("scale-through-sum", [&] { return flattenLinear(); });
  step("permute-through-concat", [&] { return permutesThroughConcats(); });
  step("reshape-scale-through-concat", [&] { return reshapesThroughConcats(); });
  step("concat-through-concat", [&] { return concatsThroughConcats(); });
  step("associativity-views", [&] { return flattenAssoc(); });
  overBudget_ = nullptr;
  return changed;
}

// Zero terms (relation semantics, x + 0 = x in the reals): classes that hold
// only zeros (a constant of zeros; layout ops, concats, negations, casts,
// sums of such; a product with one) are found first, then a sum or add one
// of whose terms is such a class of the result's own type drops it: the
// rest (one term: that class; more: their sum). This is how a backward's
// zero-padded pieces (slice_backward writing rotary's halves into zeros,
// added back together) meet the rank-local ones.
bool allZeros(const ir::Tensor& t) {
  for (int64_t i = 0; i < t.numel(); ++i)
    if (t.getAsDouble(i) != 0) return false;
  return true;
}

bool zeroResult(ir::OpKind op, const std::vector<bool>& z) {
  using K = ir::OpKind;
  bool all = !z.empty() && std::all_of(z.begin(), z.end(), [](bool b) { return b; });
  switch (op) {
    case K::Reshape: case K::Squeeze: case K::Unsqueeze: case K::Transpose: case K::Expand: case K::Slice:
    case K::Split: case K::Neg: case K::Identity: case K::Abs: case K::Relu: case K::Cast:
      return !z.empty() && z[0];
    case K::Concat: case K::Add:
      return all;
    case K::Mul:
      return std::any_of(z.begin(), z.end(), [](bool b) { return b; });
    default:
      return false;
  }
}

int Engine::dropZeroTerms() {
  using K = ir::OpKind;
  const std::vector<ClassId> classes = g_.canonicalClasses();
  std::set<ClassId> zero;
  auto isZero = [&](ClassId k) { return zero.count(g_.find(k)) > 0; };
  auto zeroNode = [&](const ENode& n) {
    auto allZero = [&] { return !n.kids.empty() && std::all_of(n.kids.begin(), n.kids.end(), isZero); };
    switch (n.op) {
      case kOpSlice: case kOpPermute: case kOpReshape: case kOpScale: return isZero(n.kids[0]);
      case kOpConcat: case kOpSum: return allZero();
      case kOpDist:
        return zeroLeaves_ && n.data[0] >= 0 && size_t(n.data[0]) < zeroLeaves_->size() &&
               (*zeroLeaves_)[size_t(n.data[0])].count(ir::ValueId(n.data[1])) > 0;
      default: break;
    }
    if (isRelOp(n.op)) return false;
    if (K(n.op) == K::Constant) return allZeros(ir::attrTensor(in_.attrMap(n.data[0]), "value"));
    std::vector<bool> kz;
    for (ClassId k : n.kids) kz.push_back(isZero(k));
    return zeroResult(K(n.op), kz);
  };
  // Zeros start at a constant of zeros or a D value the lowering found zero:
  // without one (most engines), nothing to do.
  bool seeded = false;
  for (ClassId c : classes) {
    for (const ENode& n : g_.nodes(c))
      if ((n.op == kOpDist || (!isRelOp(n.op) && K(n.op) == K::Constant)) && zeroNode(n)) {
        seeded = true;
        break;
      }
    if (seeded) break;
  }
  if (!seeded) return 0;
  for (bool grew = true; grew;) {
    grew = false;
    for (ClassId c : classes) {
      if (isZero(c)) continue;
      for (const ENode& n : g_.nodes(c))
        if (zeroNode(n)) {
          zero.insert(g_.find(c));
          grew = true;
          break;
        }
    }
  }
  if (zero.empty()) return 0;
  int changed = 0;
  for (ClassId c : classes) {
    if (isZero(c)) continue;
    const ir::TensorType t = g_.type(c);  // a copy: sum() adds classes
    std::vector<ClassId> keep;
    bool dropped = false;
    for (const ENode& n : g_.nodes(c)) {
      if (n.op != kOpSum && n.op != int32_t(K::Add)) continue;
      keep.clear();
      dropped = false;
      for (ClassId k : n.kids) {
        if (isZero(k) && g_.type(k) == t) dropped = true;
        else keep.push_back(k);
      }
      if (dropped && !keep.empty()) break;
      dropped = false;
    }
    if (!dropped) continue;
    std::optional<ClassId> rest = keep.size() == 1 ? std::optional<ClassId>(keep[0]) : sum(keep);
    if (!rest || g_.type(*rest) != t) continue;
    if (g_.find(*rest) != g_.find(c) && mergeChecked(c, *rest)) ++changed;
  }
  if (changed) g_.rebuild();
  return changed;
}

// Slice tiling (relation semantics, the converse of the proven lemmas
// concat-adjacent-slices and slice-full): when slices of one class along
// one dim tile it exactly, from 0 to its (concrete) extent, the class is
// the concat of those slices. Two tilings per (class, dim): the finest
// (smallest next piece) and the coarsest (largest next piece).
int Engine::tileSlices() {
  std::map<std::pair<ClassId, int64_t>, std::map<int64_t, std::map<int64_t, ClassId>>> pieces;
  for (ClassId c : g_.canonicalClasses())
    for (const ENode& n : g_.nodes(c))
      if (n.op == kOpSlice) pieces[{g_.find(n.kids[0]), n.data[0]}][n.data[1]][n.data[2]] = c;
  int changed = 0;
  for (const auto& [key, byStart] : pieces) {
    const ir::Dim ext = g_.type(key.first).shape.at(size_t(key.second));  // a copy: concat() adds classes
    if (!ext.isConcrete()) continue;
    for (bool finest : {true, false}) {
      std::vector<ClassId> parts;
      int64_t pos = 0;
      while (pos < ext.value()) {
        auto it = byStart.find(pos);
        if (it == byStart.end() || it->second.empty()) break;
        auto pick = finest ? it->second.begin() : std::prev(it->second.end());
        if (pick->first <= pos) break;
        parts.push_back(pick->second);
        pos = pick->first;
      }
      if (pos != ext.value() || parts.size() < 2) continue;
      size_t before = g_.numNodes();
      auto cat = concat(key.second, parts);
      if (!cat) continue;
      bool merged = g_.find(*cat) != g_.find(key.first) && mergeChecked(key.first, *cat);
      if (merged || g_.numNodes() != before) ++changed;
    }
  }
  if (changed) g_.rebuild();
  return changed;
}

// Slice of a concat (relation semantics, the general form of the proven
// slice-within-first, slice-past-first-last and slice-of-concat-first):
// slice(concat(x_1..x_n, dim=d), d, s, e) over concrete extents is the
// concat along d of the parts [s, e) covers, the first and last cut to the
// range (one part: that part, or its slice). Read off the widest concat of
// the class along d (associativity-views' flat node), so a slice at any
// part boundary of an n-ary concat (a fused QKV of 3 x tp unequal heads)
// resolves in one step instead of one part per iteration of lemmas.
int Engine::slicesOfConcats() {
  struct Cut {
    ClassId out;
    int64_t dim;
    std::vector<std::tuple<ClassId, int64_t, int64_t>> parts;  // part, start, end within it
  };
  std::vector<Cut> cuts;
  for (ClassId c : g_.canonicalClasses())
    for (const ENode& n : g_.nodes(c)) {
      if (n.op != kOpSlice) continue;
      const int64_t d = n.data[0], s = n.data[1], e = n.data[2];
      const ENode* widest = widestConcat(n.kids[0], d);
      if (!widest) continue;
      Cut cut{c, d, {}};
      int64_t pos = 0;
      bool concrete = true;
      for (ClassId k : widest->kids) {
        const ir::Shape& ks = g_.type(k).shape;
        if (size_t(d) >= ks.size() || !ks[size_t(d)].isConcrete()) {
          concrete = false;
          break;
        }
        const int64_t w = ks[size_t(d)].value(), lo = std::max(s, pos), hi = std::min(e, pos + w);
        if (lo < hi) cut.parts.emplace_back(k, lo - pos, hi - pos);
        pos += w;
      }
      if (concrete && !cut.parts.empty() && e <= pos) cuts.push_back(std::move(cut));
    }
  int changed = 0;
  for (const Cut& cut : cuts) {
    size_t before = g_.numNodes();
    std::vector<ClassId> parts;
    for (const auto& [k, lo, hi] : cut.parts) {
      auto p = slice(k, cut.dim, lo, hi);  // the whole part is the part itself
      if (!p) break;
      parts.push_back(*p);
    }
    if (parts.size() != cut.parts.size()) continue;
    auto whole = parts.size() == 1 ? std::optional<ClassId>(parts[0]) : relNode(kOpConcat, {cut.dim}, parts);
    bool merged = whole && g_.find(*whole) != g_.find(cut.out) && mergeChecked(cut.out, *whole);
    if (merged || g_.numNodes() != before) ++changed;
  }
  if (changed) g_.rebuild();
  return changed;
}

StopReason Engine::saturate(const Budget& b, const std::function<bool()>& done) {
  auto deadline = std::chrono::steady_clock::now() + b.time;
  g_.rebuild();
  for (int it = 0; it < b.iterations; ++it) {
    if (done && done()) return StopReason::GoalReached;
    ++stats_.iterations;
    int changed = applyRules(deadline, b);
    stats_.nodes = std::max<int64_t>(stats_.nodes, int64_t(g_.numNodes()));
    // A budget that ran out inside the iteration stopped it short: no
    // change then is not a fixpoint.
    if (g_.numNodes() > b.nodes) return StopReason::NodeLimit;
    if (b.past(deadline)) return StopReason::TimeLimit;
    if (changed == 0) return StopReason::Saturated;
  }
  if (done && done()) return StopReason::GoalReached;
  return StopReason::IterationLimit;
}

}  // namespace sp::rewrite

// The engine's e-graph vocabulary: interning, relation-operator typing,
// IR layout bridges, relation terms in and clean terms out.
#include "rewrite/engine/engine.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <numeric>

#include "ir/text.h"
#include "rewrite/smt/smt.h"

namespace sp::rewrite {

namespace {

// Ops whose "axis"/"axes" attribute counts dims of the first input.
bool axisRelative(ir::OpKind op) {
  using K = ir::OpKind;
  switch (op) {
    case K::Softmax: case K::LogSoftmax: case K::LayerNorm: case K::RmsNorm: case K::ReduceSum:
    case K::ReduceMean: case K::ReduceMax: case K::ReduceMin: case K::ReduceProd: case K::ArgMax:
    case K::ArgMin: case K::Concat: case K::Split: case K::Gather: case K::GatherElements:
    case K::ScatterElements: case K::TopK:
      return true;
    default: return false;
  }
}

}  // namespace

int64_t Interner::attrs(ir::OpKind op, const ir::AttrMap& a, int64_t inRank) {
  ir::AttrMap m = a;
  if (axisRelative(op) && inRank > 0) {
    if (auto it = m.find("axis"); it != m.end() && std::holds_alternative<int64_t>(it->second)) {
      int64_t& v = std::get<int64_t>(it->second);
      if (v < 0) v += inRank;
    }
    if (auto it = m.find("axes"); it != m.end() && std::holds_alternative<std::vector<int64_t>>(it->second)) {
      auto& v = std::get<std::vector<int64_t>>(it->second);
      for (auto& x : v)
        if (x < 0) x += inRank;
      std::sort(v.begin(), v.end());
      if (v.empty())  // empty axes: all axes
        for (int64_t d = 0; d < inRank; ++d) v.push_back(d);
    }
  }
  // one_hot counts its axis in its output (the new axis).
  if (op == ir::OpKind::OneHot)
    if (auto it = m.find("axis"); it != m.end() && std::holds_alternative<int64_t>(it->second))
      if (int64_t& v = std::get<int64_t>(it->second); v < 0) v += inRank + 1;
  // squeeze counts axes in its input, unsqueeze in its output.
  if (op == ir::OpKind::Squeeze || op == ir::OpKind::Unsqueeze)
    if (auto it = m.find("axes"); it != m.end() && std::holds_alternative<std::vector<int64_t>>(it->second)) {
      auto& v = std::get<std::vector<int64_t>>(it->second);
      int64_t r = op == ir::OpKind::Squeeze ? inRank : inRank + int64_t(v.size());
      for (auto& x : v)
        if (x < 0) x += r;
      std::sort(v.begin(), v.end());
    }
  if (op == ir::OpKind::Transpose) {
    auto& p = std::get<std::vector<int64_t>>(m["perm"]);
    if (p.empty())
      for (int64_t d = inRank - 1; d >= 0; --d) p.push_back(d);
  }
  std::string key = std::to_string(int(op)) + "{";
  for (const auto& [k, v] : m) key += k + "=" + ir::formatAttr(v) + ";";
  auto [it, fresh] = attrIds_.emplace(key, int64_t(attrs_.size()));
  if (fresh) attrs_.push_back(std::move(m));
  return it->second;
}

int64_t Interner::shape(const ir::Shape& s) {
  auto [it, fresh] = shapeIds_.emplace(ir::shapeStr(s), int64_t(shapes_.size()));
  if (fresh) shapes_.push_back(s);
  return it->second;
}

Engine::Engine(Interner& in, const std::vector<Rule>& rules, EngineStats& stats, const ir::Program& dist)
    : in_(in), rules_(rules), stats_(stats), dist_(dist) {
  // Sum over ranks is a multiset (sum-comm and sum-assoc, both proven
  // lemmas): sums that differ only in operand order are one e-node, so a
  // sum over G ranks is not explored in its |G|! orders.
  g_.setCommutative(kOpSum);
}
Engine::~Engine() = default;

std::optional<ClassId> Engine::add(ENode n, const ir::TensorType& t) {
  if (auto c = g_.lookup(n)) {
    if (!(g_.type(*c) == t)) return std::nullopt;
    return *c;
  }
  return g_.add(std::move(n), t);
}

bool Engine::mergeChecked(ClassId a, ClassId b) {
  if (!(g_.type(a) == g_.type(b))) return false;
  g_.merge(a, b);
  return true;
}

ClassId Engine::dist(int64_t rank, ir::ValueId v) {
  const auto& t = dist_.rank(rank).value(v).type;
  auto c = add(ENode{kOpDist, {rank, v}, {}}, t);
  SP_ASSERT(c.has_value(), "dist leaf with two types");
  return *c;
}

std::optional<ir::TensorType> Engine::relType(int32_t op, const std::vector<int64_t>& data,
                                              const std::vector<ClassId>& kids) const {
  ir::TensorType t = g_.type(kids.at(0));
  int64_t rank = int64_t(t.shape.size());
  switch (op) {
    case kOpConcat: {  // n-ary (engine_assoc.cpp flattens nested ones)
      if (kids.size() < 2) return std::nullopt;
      int64_t d = data[0];
      if (d < 0 || d >= rank) return std::nullopt;
      for (size_t i = 1; i < kids.size(); ++i) {
        const ir::TensorType& u = g_.type(kids[i]);
        if (u.shape.size() != t.shape.size() || u.dtype != t.dtype) return std::nullopt;
        for (int64_t k = 0; k < rank; ++k)
          if (k != d && t.shape[size_t(k)] != u.shape[size_t(k)]) return std::nullopt;
        auto s = ir::addDims(t.shape[size_t(d)], u.shape[size_t(d)]);
        if (!s) return std::nullopt;
        t.shape[size_t(d)] = *s;
      }
      return t;
    }
    case kOpSum:
      if (kids.size() < 2) return std::nullopt;
      for (size_t i = 1; i < kids.size(); ++i)
        if (!(g_.type(kids[i]) == t)) return std::nullopt;
      return t;
    case kOpSlice: {
      int64_t d = data[0], s = data[1], e = data[2];
      if (d < 0 || d >= rank || s < 0 || e < s) return std::nullopt;
      const ir::Dim& ext = t.shape[size_t(d)];
      if (!ext.isConcrete() || e > ext.value()) return std::nullopt;
      t.shape[size_t(d)] = ir::Dim(e - s);
      return t;
    }
    case kOpScale: return t;
    case kOpPermute: {
      if (int64_t(data.size()) != rank) return std::nullopt;
      std::vector<int64_t> sorted = data;
      std::sort(sorted.begin(), sorted.end());
      for (int64_t k = 0; k < rank; ++k)
        if (sorted[size_t(k)] != k) return std::nullopt;
      ir::Shape s;
      for (int64_t p : data) s.push_back(t.shape[size_t(p)]);
      t.shape = s;
      return t;
    }
    case kOpReshape: {
      const ir::Shape& s = in_.shapeOf(data[0]);
      auto a = ir::numElements(t.shape), b = ir::numElements(s);
      if (!a || !b || *a != *b) return std::nullopt;
      t.shape = s;
      return t;
    }
    default: return std::nullopt;
  }
}

std::optional<ClassId> Engine::relNode(int32_t op, std::vector<int64_t> data, std::vector<ClassId> kids) {
  for (auto& k : kids) k = g_.find(k);
  auto t = relType(op, data, kids);
  if (!t) return std::nullopt;
  return add(ENode{op, std::move(data), std::move(kids)}, *t);
}

std::optional<ClassId> Engine::concat(int64_t dim, const std::vector<ClassId>& all) {
  if (all.empty()) return std::nullopt;
  int64_t d = normDim(dim, int64_t(g_.type(all[0]).shape.size()));
  // A part of extent 0 along the dim contributes no element: the concat is
  // that of the other parts (all empty: the first).
  std::vector<ClassId> parts;
  for (ClassId p : all) {
    const ir::Shape& s = g_.type(p).shape;
    bool empty = d >= 0 && size_t(d) < s.size() && s[size_t(d)].isConcrete() && s[size_t(d)].value() == 0;
    if (!empty) parts.push_back(p);
  }
  if (parts.empty()) parts.push_back(all[0]);
  ClassId acc = parts[0];
  for (size_t i = 1; i < parts.size(); ++i) {
    auto c = relNode(kOpConcat, {d}, {acc, parts[i]});
    if (!c) return std::nullopt;
    acc = *c;
  }
  return acc;
}

std::optional<ClassId> Engine::sum(const std::vector<ClassId>& parts) {
  if (parts.empty()) return std::nullopt;
  ClassId acc = parts[0];
  for (size_t i = 1; i < parts.size(); ++i) {
    auto c = relNode(kOpSum, {}, {acc, parts[i]});
    if (!c) return std::nullopt;
    acc = *c;
  }
  return acc;
}

std::optional<ClassId> Engine::slice(ClassId x, int64_t dim, int64_t start, int64_t end) {
  int64_t d = normDim(dim, int64_t(g_.type(x).shape.size()));
  const ir::Dim ext = g_.type(x).shape.at(size_t(std::max<int64_t>(d, 0)));
  if (start == 0 && ext.isConcrete() && end == ext.value()) return g_.find(x);  // whole-dim slice is x
  return relNode(kOpSlice, {d, start, end}, {x});
}

std::optional<ClassId> Engine::scale(ClassId x, double factor) {
  if (factor == 1.0) return g_.find(x);
  return relNode(kOpScale, {std::bit_cast<int64_t>(factor)}, {x});
}

std::optional<ClassId> Engine::permute(ClassId x, const std::vector<int64_t>& perm) {
  bool id = true;
  for (size_t i = 0; i < perm.size(); ++i) id = id && perm[i] == int64_t(i);
  if (id && perm.size() == g_.type(x).shape.size()) return g_.find(x);
  return relNode(kOpPermute, perm, {x});
}

std::optional<ClassId> Engine::reshape(ClassId x, const ir::Shape& shape) {
  if (g_.type(x).shape == shape) return g_.find(x);
  return relNode(kOpReshape, {in_.shape(shape)}, {x});
}

std::optional<ClassId> Engine::irNode(ir::OpKind op, const ir::AttrMap& attrs, std::vector<ClassId> kids,
                                      int outIndex, const ir::TensorType& t) {
  for (auto& k : kids) k = g_.find(k);
  int64_t inRank = kids.empty() ? 0 : int64_t(g_.type(kids[0]).shape.size());
  int64_t id = in_.attrs(op, attrs, inRank);
  auto c = add(ENode{int32_t(op), {id, outIndex}, kids}, t);
  if (c) bridge(op, in_.attrMap(id), kids, outIndex, *c);
  return c;
}

std::optional<ClassId> Engine::irNodeInfer(ir::OpKind op, const ir::AttrMap& attrs, std::vector<ClassId> kids,
                                           int outIndex) {
  for (auto& k : kids) k = g_.find(k);
  int64_t inRank = kids.empty() ? 0 : int64_t(g_.type(kids[0]).shape.size());
  auto full = ir::completeAttrs(op, attrs);
  if (!full.ok()) return std::nullopt;
  int64_t id = in_.attrs(op, *full, inRank);
  if (auto c = g_.lookup(ENode{int32_t(op), {id, outIndex}, kids})) return *c;
  std::vector<ir::TensorType> ins;
  for (ClassId k : kids) ins.push_back(g_.type(k));
  ir::InferCtx ctx{op, in_.attrMap(id), ins, nullptr};
  auto outs = ir::opInfo(op).infer(ctx);
  // Lemma patterns denote output 0 of a multi-output op (the matcher only
  // matches output 0 too), or a dropout's mask in a mask rule.
  if (!outs.ok() || outIndex < 0 || size_t(outIndex) >= outs->size()) return std::nullopt;
  return irNode(op, in_.attrMap(id), kids, outIndex, (*outs)[size_t(outIndex)]);
}

// expand (numpy broadcast_to) is, by definition, leading unit dims added
// (a reshape) and every size-1 dim that grows to n replaced by n copies
// along it (a concat of the same class). Only concrete sizes up to
// kMaxExpandCopies, so the concat chain stays small.
std::optional<ClassId> Engine::expandAsConcat(ClassId x, const ir::Shape& to) {
  constexpr int64_t kMaxExpandCopies = 64;
  ir::Shape from = g_.type(x).shape;
  if (from.size() > to.size()) return std::nullopt;
  ir::Shape padded(to.size() - from.size(), ir::Dim(1));
  padded.insert(padded.end(), from.begin(), from.end());
  std::optional<ClassId> cur = reshape(x, padded);
  for (size_t d = 0; d < to.size() && cur; ++d) {
    if (padded[d] == to[d]) continue;
    if (padded[d] != ir::Dim(1) || !to[d].isConcrete() || to[d].value() > kMaxExpandCopies) return std::nullopt;
    cur = concat(int64_t(d), std::vector<ClassId>(size_t(to[d].value()), *cur));
  }
  return cur;
}

void Engine::bridge(ir::OpKind op, const ir::AttrMap& a, const std::vector<ClassId>& kids, int outIndex,
                    ClassId out) {
  using K = ir::OpKind;
  std::optional<ClassId> eq;
  const ir::TensorType outT = g_.type(out);  // a copy: the bridges add classes (g_ may reallocate)
  switch (op) {
    case K::Identity: eq = kids[0]; break;
    case K::Transpose: eq = permute(kids[0], ir::attrInts(a, "perm")); break;
    case K::Reshape: case K::Squeeze: case K::Unsqueeze: eq = reshape(kids[0], outT.shape); break;
    case K::Concat: eq = concat(ir::attrInt(a, "axis"), kids); break;
    case K::Expand: eq = expandAsConcat(kids[0], outT.shape); break;
    case K::Split: {
      int64_t axis = ir::attrInt(a, "axis");
      const auto& sizes = ir::attrInts(a, "sizes");
      int64_t off = 0;
      for (int k = 0; k < outIndex; ++k) off += sizes[size_t(k)];
      eq = slice(kids[0], axis, off, off + sizes[size_t(outIndex)]);
      break;
    }
    case K::Slice: {
      const auto& st = ir::attrInts(a, "starts");
      const auto& en = ir::attrInts(a, "ends");
      auto axes = ir::attrInts(a, "axes");
      const auto& steps = ir::attrInts(a, "steps");
      for (int64_t s : steps)
        if (s != 1) return;
      if (axes.empty())
        for (size_t i = 0; i < st.size(); ++i) axes.push_back(int64_t(i));
      const ir::TensorType inT = g_.type(kids[0]);  // a copy: slice() adds classes
      std::optional<ClassId> cur = kids[0];
      for (size_t i = 0; i < axes.size() && cur; ++i) {
        int64_t d = normDim(axes[i], int64_t(inT.shape.size()));
        if (d < 0 || d >= int64_t(inT.shape.size()) || !inT.shape[size_t(d)].isConcrete()) return;
        int64_t n = inT.shape[size_t(d)].value();
        auto clampIdx = [n](int64_t v) { if (v < 0) v += n; return std::clamp<int64_t>(v, 0, n); };
        int64_t s = clampIdx(st[i]), e = std::max(clampIdx(en[i]), s);
        cur = slice(*cur, d, s, e);
      }
      eq = cur;
      break;
    }
    case K::Mul: case K::Div: {
      // x * c and x / c by a one-element constant c that does not change x's
      // type: the relation scale (all_reduce avg lowers to scale(sum, 1/g)).
      auto c = scalarConstant(kids[1]);
      if (!c || !(g_.type(kids[0]) == outT) || (op == K::Div && *c == 0)) return;
      eq = scale(kids[0], op == K::Mul ? *c : 1.0 / *c);
      break;
    }
    default: return;
  }
  if (eq) mergeChecked(out, *eq);
}

std::optional<double> Engine::scalarConstant(ClassId c) const {
  if (!ir::isFloat(g_.type(c).dtype)) return std::nullopt;
  for (const ENode& n : g_.nodes(c)) {
    if (n.op != int32_t(ir::OpKind::Constant)) continue;
    const auto& t = std::get<ir::Tensor>(in_.attrMap(n.data[0]).at("value"));
    if (t.numel() == 1) return t.getAsDouble(0);
  }
  return std::nullopt;
}

Result<ClassId> Engine::addRel(const Rel& r) {
  auto need = [&](std::optional<ClassId> c) -> Result<ClassId> {
    if (!c) return makeError("relation-shape-mismatch", "ill-typed relation " + str(r));
    return *c;
  };
  switch (r.op) {
    case RelOp::Dist: {
      SP_ASSIGN(int64_t rank, r.rank.eval({}, nullptr));
      if (rank < 0 || rank >= dist_.worldSize())
        return makeError("rank-out-of-range", "rank " + std::to_string(rank) + " in " + str(r));
      auto v = dist_.rank(rank).findValue(r.name);
      if (!v) return makeError("unknown-tensor", "rank " + std::to_string(rank) + " has no tensor '" + r.name + "'");
      return dist(rank, *v);
    }
    case RelOp::Concat: case RelOp::Sum: {
      std::vector<ClassId> parts;
      for (const auto& a : r.args) {
        SP_ASSIGN(ClassId c, addRel(*a));
        parts.push_back(c);
      }
      return need(r.op == RelOp::Concat ? concat(r.dim, parts) : sum(parts));
    }
    case RelOp::Slice: {
      SP_ASSIGN(ClassId x, addRel(*r.args[0]));
      SP_ASSIGN(int64_t s, r.start.eval({}, nullptr));
      SP_ASSIGN(int64_t e, r.end.eval({}, nullptr));
      return need(slice(x, r.dim, s, e));
    }
    case RelOp::Scale: {
      SP_ASSIGN(ClassId x, addRel(*r.args[0]));
      return need(scale(x, r.factor));
    }
    case RelOp::Permute: {
      SP_ASSIGN(ClassId x, addRel(*r.args[0]));
      return need(permute(x, r.perm));
    }
    case RelOp::Reshape: {
      SP_ASSIGN(ClassId x, addRel(*r.args[0]));
      return need(reshape(x, r.shape));
    }
    case RelOp::Seq: case RelOp::For: break;
  }
  return makeError("not-concrete", "relation term " + str(r) + " is not a concrete dist expression");
}

std::vector<DistLeaf> Engine::distLeaves(ClassId c) const {
  std::vector<DistLeaf> out;
  for (const ENode& n : g_.nodes(c))
    if (n.op == kOpDist) out.emplace_back(n.data[0], ir::ValueId(n.data[1]));
  return out;
}

namespace {
// The rank of the first dist leaf of a concrete term (a sort key).
int64_t firstRank(const Rel& r) {
  if (r.op == RelOp::Dist) return r.rank.kind == IntExpr::Kind::Const ? r.rank.value : 0;
  return r.args.empty() ? 0 : firstRank(*r.args[0]);
}
}  // namespace

RelPtr Engine::extractClean(ClassId c, const std::function<bool(const DistLeaf&)>& leafOk, bool tilingOnly) const {
  auto best = g_.extract([&](const ENode& n, const std::vector<double>& kids) -> std::optional<double> {
    if (!isRelOp(n.op) || (tilingOnly && n.op != kOpDist && n.op != kOpConcat)) return std::nullopt;
    if (n.op == kOpDist) {
      if (!leafOk({n.data[0], ir::ValueId(n.data[1])})) return std::nullopt;
      return 1.0 + 1e-3 * double(n.data[0]);  // prefer low ranks: deterministic
    }
    return std::accumulate(kids.begin(), kids.end(), 1.0);
  });
  std::function<RelPtr(ClassId)> build = [&](ClassId k) -> RelPtr {
    auto it = best.find(g_.find(k));
    if (it == best.end()) return nullptr;
    const ENode& n = it->second.second;
    switch (n.op) {
      case kOpDist:
        return Rel::dist(IntExpr::constant(n.data[0]), dist_.rank(n.data[0]).value(ir::ValueId(n.data[1])).name);
      case kOpConcat: case kOpSum: {
        std::vector<RelPtr> parts;
        for (ClassId kid : n.kids) {
          RelPtr p = build(kid);
          // Flatten left-nested chains into one n-ary operator.
          if (p->op == (n.op == kOpSum ? RelOp::Sum : RelOp::Concat) &&
              (n.op == kOpSum || p->dim == n.data[0]) && parts.empty())
            parts = p->args;
          else
            parts.push_back(p);
        }
        if (n.op == kOpSum)  // a multiset, stored by class id: show it by rank
          std::stable_sort(parts.begin(), parts.end(), [](const RelPtr& a, const RelPtr& b) {
            return firstRank(*a) < firstRank(*b);
          });
        return n.op == kOpSum ? Rel::sum(parts) : Rel::concat(n.data[0], parts);
      }
      case kOpSlice:
        return Rel::slice(build(n.kids[0]), n.data[0], IntExpr::constant(n.data[1]), IntExpr::constant(n.data[2]));
      case kOpScale: return Rel::scale(build(n.kids[0]), std::bit_cast<double>(n.data[0]));
      case kOpPermute: return Rel::permute(build(n.kids[0]), n.data);
      case kOpReshape: return Rel::reshape(build(n.kids[0]), in_.shapeOf(n.data[0]));
      default: return nullptr;
    }
  };
  return build(c);
}

RelPtr Engine::extractShards(ClassId c, const std::function<bool(const DistLeaf&)>& leafOk) const {
  // The finest tiling: in every class a concat (of the most parts) before a
  // leaf, so a gathered leaf or a concat of gathered leaves becomes the
  // shards they were gathered from. Memoized; a class on the current path
  // (a concat cycle) has none.
  std::map<ClassId, std::pair<RelPtr, size_t>> memo;  // class -> (term, leaves)
  std::set<ClassId> onPath;
  std::function<std::pair<RelPtr, size_t>(ClassId)> finest = [&](ClassId k) -> std::pair<RelPtr, size_t> {
    k = g_.find(k);
    if (auto it = memo.find(k); it != memo.end()) return it->second;
    if (!onPath.insert(k).second) return {nullptr, 0};
    std::pair<RelPtr, size_t> best{nullptr, 0};
    for (const ENode& n : g_.nodes(k)) {
      if (n.op == kOpDist) {
        if (!best.first && leafOk({n.data[0], ir::ValueId(n.data[1])}))
          best = {Rel::dist(IntExpr::constant(n.data[0]), dist_.rank(n.data[0]).value(ir::ValueId(n.data[1])).name), 1};
        continue;
      }
      if (n.op != kOpConcat || n.kids.size() < 2) continue;
      std::vector<RelPtr> parts;
      size_t leaves = 0;
      bool ok = true;
      for (ClassId kid : n.kids) {
        auto [p, l] = finest(kid);
        if (!p) { ok = false; break; }
        leaves += l;
        if (p->op == RelOp::Concat && p->dim == n.data[0]) parts.insert(parts.end(), p->args.begin(), p->args.end());
        else parts.push_back(p);
      }
      if (ok && leaves > best.second) best = {Rel::concat(n.data[0], parts), leaves};
    }
    onPath.erase(k);
    return memo[k] = best;
  };
  auto [r, leaves] = finest(c);
  return leaves >= 2 ? r : nullptr;
}

}  // namespace sp::rewrite

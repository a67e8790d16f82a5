// Relation expressions: comprehension expansion, type inference, evaluation.
#include <algorithm>
#include <numeric>
#include <optional>

#include "ir/interpreter.h"

#include "rewrite/relation/relation.h"

namespace sp::rewrite {

namespace {

struct Part {
  const Rel* rel;
  RelScope scope;
};

Status expandInto(const Rel& r, const RelScope& s, std::vector<Part>& out) {
  if (r.op != RelOp::For) {
    out.push_back({&r, s});
    return okStatus();
  }
  std::vector<int64_t> values;
  if (r.domain.isRange) {
    if (r.domain.hi < r.domain.lo)
      return makeError("empty-rank-range", "for " + r.name + " in " + r.domain.str() + ": empty range");
    for (int64_t v = r.domain.lo; v <= r.domain.hi; ++v) values.push_back(v);
  } else {
    if (!s.ranks)
      return makeError("no-rank-space", "for " + r.name + " in " + r.domain.group + ": no mesh to resolve the group");
    SP_ASSIGN(values, s.ranks->members(r.domain.group, s.anchorRank));
  }
  for (int64_t v : values) {
    RelScope inner = s;
    inner.vars[r.name] = v;
    inner.anchorRank = v;
    SP_TRY(expandInto(*r.args[0], inner, out));
  }
  return okStatus();
}

Result<std::vector<Part>> expandParts(const Rel& r, const RelScope& s) {
  std::vector<Part> out;
  for (const auto& a : r.args) SP_TRY(expandInto(*a, s, out));
  return out;
}

std::string dimsStr(const std::vector<int64_t>& d) {
  std::string s;
  for (int64_t x : d) s += (s.empty() ? "" : ", ") + std::to_string(x);
  return "[" + s + "]";
}

Status checkPerm(const std::vector<int64_t>& perm, int64_t rank) {
  std::vector<int64_t> sorted = perm;
  std::sort(sorted.begin(), sorted.end());
  std::vector<int64_t> want(static_cast<size_t>(rank), 0);
  std::iota(want.begin(), want.end(), 0);
  if (sorted != want)
    return makeError("bad-permutation", "permute " + dimsStr(perm) + " is not a permutation of rank " +
                                            std::to_string(rank));
  return okStatus();
}

}  // namespace

Result<ir::TensorType> inferType(const Rel& r, const TypeLookup& lookup, const RelScope& scope) {
  std::string what = std::string(relOpName(r.op));
  switch (r.op) {
    case RelOp::Seq: return lookup.seq(r.name);
    case RelOp::Dist: {
      SP_ASSIGN(int64_t rank, r.rank.eval(scope.vars, scope.ranks));
      return lookup.dist(rank, r.name);
    }
    case RelOp::Concat: case RelOp::Sum: {
      SP_ASSIGN(auto parts, expandParts(r, scope));
      std::optional<ir::TensorType> first;
      int64_t axis = 0;
      for (size_t i = 0; i < parts.size(); ++i) {
        SP_ASSIGN(ir::TensorType t, inferType(*parts[i].rel, lookup, parts[i].scope));
        if (!first) {
          first = t;
          if (r.op == RelOp::Concat) {
            SP_ASSIGN(axis, ir::normAxis(r.dim, int64_t(t.shape.size()), "concat"));
          }
          continue;
        }
        bool ok = t.shape.size() == first->shape.size();
        for (size_t d = 0; ok && d < t.shape.size(); ++d)
          if ((r.op == RelOp::Sum || int64_t(d) != axis) && t.shape[d] != first->shape[d]) ok = false;
        if (!ok)
          return makeError("relation-shape-mismatch",
                           what + (r.op == RelOp::Concat ? " dim " + std::to_string(r.dim) : "") +
                               ": part " + std::to_string(i) + " (" + str(*parts[i].rel) + ") has shape " +
                               ir::shapeStr(t.shape) + ", part 0 has " + ir::shapeStr(first->shape));
        if (r.op == RelOp::Concat) {
          auto sum = ir::addDims(first->shape[size_t(axis)], t.shape[size_t(axis)]);
          if (!sum)
            return makeError("relation-shape-mismatch", "concat dim " + std::to_string(r.dim) + ": cannot add " +
                                                            first->shape[size_t(axis)].str() + " and " +
                                                            t.shape[size_t(axis)].str());
          first->shape[size_t(axis)] = *sum;
        }
      }
      return *first;
    }
    case RelOp::Slice: {
      SP_ASSIGN(ir::TensorType t, inferType(*r.args[0], lookup, scope));
      SP_ASSIGN(int64_t axis, ir::normAxis(r.dim, int64_t(t.shape.size()), "slice"));
      SP_ASSIGN(int64_t start, r.start.eval(scope.vars, scope.ranks));
      SP_ASSIGN(int64_t end, r.end.eval(scope.vars, scope.ranks));
      const ir::Dim& ext = t.shape[size_t(axis)];
      if (start < 0 || end < start || (ext.isConcrete() && end > ext.value()))
        return makeError("slice-out-of-bounds", "slice dim " + std::to_string(r.dim) + " [" +
                                                    std::to_string(start) + ", " + std::to_string(end) +
                                                    ") of extent " + ext.str() + " in " + str(r));
      t.shape[size_t(axis)] = ir::Dim(end - start);
      return t;
    }
    case RelOp::Reshape: {
      SP_ASSIGN(ir::TensorType t, inferType(*r.args[0], lookup, scope));
      auto a = ir::numElements(t.shape), b = ir::numElements(r.shape);
      if (!a || !b || *a != *b)
        return makeError("reshape-size-mismatch", "reshape " + ir::shapeStr(t.shape) + " to " +
                                                      ir::shapeStr(r.shape) + ": element counts differ");
      t.shape = r.shape;
      return t;
    }
    case RelOp::Permute: {
      SP_ASSIGN(ir::TensorType t, inferType(*r.args[0], lookup, scope));
      SP_TRY(checkPerm(r.perm, int64_t(t.shape.size())));
      ir::Shape s;
      for (int64_t p : r.perm) s.push_back(t.shape[size_t(p)]);
      t.shape = s;
      return t;
    }
    case RelOp::Scale: return inferType(*r.args[0], lookup, scope);
    case RelOp::For:
      return makeError("comprehension-outside-concat",
                       "'" + str(r) + "' must be a part of concat or sum");
  }
  return makeError("internal", "unknown relation op");
}

namespace {

// The IR op giving each relation operator its numeric meaning.
ir::OpKind irOpOf(RelOp op) {
  switch (op) {
#define RELOP(E, NAME, MINA, MAXA, IROP, ATTRS, DOC) \
  case RelOp::E:                                    \
    return ir::OpKind::IROP;
#include "rewrite/relation/relation_ops.def"
#undef RELOP
  }
  return ir::OpKind::Identity;
}

Result<ir::Tensor> run(RelOp op, ir::AttrMap attrs, std::vector<ir::Tensor> in) {
  SP_ASSIGN(auto out, ir::evalOp(irOpOf(op), attrs, in));
  return std::move(out[0]);
}

// A leaf as f64; the first leaf met fixes the result's dtype.
Result<ir::Tensor> leaf(const ir::TensorMap* m, const std::string& name, const std::string& what,
                        std::optional<ir::DType>& dtype) {
  if (!m) return makeError("missing-tensor", what + ": no tensors given");
  auto it = m->find(name);
  if (it == m->end()) return makeError("missing-tensor", what + ": no tensor named '" + name + "'");
  if (!dtype) dtype = it->second.dtype();
  return it->second.castTo(ir::DType::F64);
}

// The term on the IR kernels in f64 (already type-checked by inferType).
Result<ir::Tensor> evalF64(const Rel& r, const TensorSource& src, const RelScope& scope,
                           std::optional<ir::DType>& dtype) {
  switch (r.op) {
    case RelOp::Seq: return leaf(src.seq, r.name, "seq." + r.name, dtype);
    case RelOp::Dist: {
      SP_ASSIGN(int64_t rank, r.rank.eval(scope.vars, scope.ranks));
      if (!src.dist || rank < 0 || rank >= int64_t(src.dist->size()))
        return makeError("missing-tensor", str(r) + ": rank " + std::to_string(rank) + " has no tensors");
      return leaf(&(*src.dist)[size_t(rank)], r.name, str(r), dtype);
    }
    case RelOp::Concat:
    case RelOp::Sum: {
      SP_ASSIGN(auto parts, expandParts(r, scope));
      std::vector<ir::Tensor> xs;
      for (const auto& p : parts) {
        SP_ASSIGN(ir::Tensor t, evalF64(*p.rel, src, p.scope, dtype));
        xs.push_back(std::move(t));
      }
      if (r.op == RelOp::Concat) return run(r.op, {{"axis", r.dim}}, std::move(xs));
      ir::Tensor acc = std::move(xs[0]);
      for (size_t i = 1; i < xs.size(); ++i) {
        SP_ASSIGN(acc, run(r.op, {}, {acc, xs[i]}));
      }
      return acc;
    }
    case RelOp::Slice: {
      SP_ASSIGN(ir::Tensor x, evalF64(*r.args[0], src, scope, dtype));
      SP_ASSIGN(int64_t start, r.start.eval(scope.vars, scope.ranks));
      SP_ASSIGN(int64_t end, r.end.eval(scope.vars, scope.ranks));
      return run(r.op,
                 {{"starts", std::vector<int64_t>{start}}, {"ends", std::vector<int64_t>{end}},
                  {"axes", std::vector<int64_t>{r.dim}}},
                 {x});
    }
    case RelOp::Reshape: {
      SP_ASSIGN(ir::Tensor x, evalF64(*r.args[0], src, scope, dtype));
      for (const auto& d : r.shape)
        if (!d.isConcrete())
          return makeError("symbolic-reshape", "reshape to " + ir::shapeStr(r.shape) + ": dims must be concrete to evaluate");
      return run(r.op, {{"shape", r.shape}}, {x});
    }
    case RelOp::Permute: {
      SP_ASSIGN(ir::Tensor x, evalF64(*r.args[0], src, scope, dtype));
      return run(r.op, {{"perm", r.perm}}, {x});
    }
    case RelOp::Scale: {
      SP_ASSIGN(ir::Tensor x, evalF64(*r.args[0], src, scope, dtype));
      return run(r.op, {}, {x, ir::Tensor::scalar(ir::DType::F64, r.factor)});
    }
    case RelOp::For:
      return makeError("comprehension-outside-concat", "'" + str(r) + "' must be a part of concat or sum");
  }
  return makeError("internal", "unknown relation op");
}

}  // namespace

// The strict typing rule first (relation_ops.def: no broadcasting sums, no
// clamped slices), on the given tensors' types; then the IR kernels.
Result<ir::Tensor> evaluate(const Rel& r, const TensorSource& src, const RelScope& scope) {
  TypeLookup types;
  auto typeIn = [](const ir::TensorMap* m, const std::string& name, const std::string& what) -> Result<ir::TensorType> {
    if (!m) return makeError("missing-tensor", what + ": no tensors given");
    auto it = m->find(name);
    if (it == m->end()) return makeError("missing-tensor", what + ": no tensor named '" + name + "'");
    return it->second.type();
  };
  types.seq = [&](const std::string& n) { return typeIn(src.seq, n, "seq." + n); };
  types.dist = [&](int64_t rank, const std::string& n) -> Result<ir::TensorType> {
    std::string what = "dist[" + std::to_string(rank) + "]." + n;
    if (!src.dist || rank < 0 || rank >= int64_t(src.dist->size()))
      return makeError("missing-tensor", what + ": rank " + std::to_string(rank) + " has no tensors");
    return typeIn(&(*src.dist)[size_t(rank)], n, what);
  };
  SP_TRY(inferType(r, types, scope));
  std::optional<ir::DType> dtype;
  SP_ASSIGN(ir::Tensor t, evalF64(r, src, scope, dtype));
  return t.castTo(dtype.value_or(ir::DType::F64));
}

}  // namespace sp::rewrite

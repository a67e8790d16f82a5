// Relation expressions: comprehension expansion, type inference, evaluation.
#include <algorithm>
#include <numeric>

#include "rewrite/relation.h"

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

// Row-major helpers over f64 values.
struct Dense {
  ir::DType dtype = ir::DType::F32;
  std::vector<int64_t> dims;
  std::vector<double> v;
};

Dense toDense(const ir::Tensor& t) {
  Dense d{t.dtype(), t.dims(), std::vector<double>(size_t(t.numel()))};
  for (int64_t i = 0; i < t.numel(); ++i) d.v[size_t(i)] = t.getAsDouble(i);
  return d;
}

ir::Tensor fromDense(const Dense& d) {
  ir::Tensor t(d.dtype, d.dims);
  for (size_t i = 0; i < d.v.size(); ++i) t.setFromDouble(int64_t(i), d.v[i]);
  return t;
}

// Splits dims around `axis`: outer count, extent, inner count.
void around(const std::vector<int64_t>& dims, int64_t axis, int64_t& outer, int64_t& inner) {
  outer = 1;
  inner = 1;
  for (int64_t i = 0; i < axis; ++i) outer *= dims[size_t(i)];
  for (size_t i = size_t(axis) + 1; i < dims.size(); ++i) inner *= dims[i];
}

Result<Dense> evalDense(const Rel& r, const TensorSource& src, const RelScope& scope);

Result<Dense> leaf(const ir::TensorMap* m, const std::string& name, const std::string& what) {
  if (!m) return makeError("missing-tensor", what + ": no tensors given");
  auto it = m->find(name);
  if (it == m->end()) return makeError("missing-tensor", what + ": no tensor named '" + name + "'");
  return toDense(it->second);
}

Result<Dense> evalDense(const Rel& r, const TensorSource& src, const RelScope& scope) {
  switch (r.op) {
    case RelOp::Seq: return leaf(src.seq, r.name, "seq." + r.name);
    case RelOp::Dist: {
      SP_ASSIGN(int64_t rank, r.rank.eval(scope.vars, scope.ranks));
      if (!src.dist || rank < 0 || rank >= int64_t(src.dist->size()))
        return makeError("missing-tensor", str(r) + ": rank " + std::to_string(rank) + " has no tensors");
      return leaf(&(*src.dist)[size_t(rank)], r.name, str(r));
    }
    case RelOp::Concat: case RelOp::Sum: {
      SP_ASSIGN(auto parts, expandParts(r, scope));
      std::vector<Dense> xs;
      for (const auto& p : parts) {
        SP_ASSIGN(Dense d, evalDense(*p.rel, src, p.scope));
        xs.push_back(std::move(d));
      }
      if (r.op == RelOp::Sum) {
        Dense out = xs[0];
        for (size_t i = 1; i < xs.size(); ++i) {
          if (xs[i].dims != out.dims)
            return makeError("relation-shape-mismatch", "sum: part " + std::to_string(i) + " has shape " +
                                                            dimsStr(xs[i].dims) + ", part 0 has " + dimsStr(out.dims));
          for (size_t k = 0; k < out.v.size(); ++k) out.v[k] += xs[i].v[k];
        }
        return out;
      }
      SP_ASSIGN(int64_t axis, ir::normAxis(r.dim, int64_t(xs[0].dims.size()), "concat"));
      Dense out{xs[0].dtype, xs[0].dims, {}};
      out.dims[size_t(axis)] = 0;
      for (size_t i = 0; i < xs.size(); ++i) {
        auto a = xs[i].dims, b = xs[0].dims;
        if (a.size() != b.size())
          return makeError("relation-shape-mismatch", "concat: part " + std::to_string(i) + " has rank " +
                                                          std::to_string(a.size()) + ", part 0 has " + std::to_string(b.size()));
        a[size_t(axis)] = b[size_t(axis)] = 0;
        if (a != b)
          return makeError("relation-shape-mismatch", "concat dim " + std::to_string(r.dim) + ": part " +
                                                          std::to_string(i) + " has shape " + dimsStr(xs[i].dims) +
                                                          ", part 0 has " + dimsStr(xs[0].dims));
        out.dims[size_t(axis)] += xs[i].dims[size_t(axis)];
      }
      int64_t outer, inner;
      around(out.dims, axis, outer, inner);
      out.v.reserve(size_t(std::accumulate(out.dims.begin(), out.dims.end(), int64_t(1), std::multiplies<>())));
      for (int64_t o = 0; o < outer; ++o)
        for (const auto& x : xs) {
          int64_t chunk = x.dims[size_t(axis)] * inner;
          out.v.insert(out.v.end(), x.v.begin() + o * chunk, x.v.begin() + (o + 1) * chunk);
        }
      return out;
    }
    case RelOp::Slice: {
      SP_ASSIGN(Dense x, evalDense(*r.args[0], src, scope));
      SP_ASSIGN(int64_t axis, ir::normAxis(r.dim, int64_t(x.dims.size()), "slice"));
      SP_ASSIGN(int64_t start, r.start.eval(scope.vars, scope.ranks));
      SP_ASSIGN(int64_t end, r.end.eval(scope.vars, scope.ranks));
      int64_t ext = x.dims[size_t(axis)];
      if (start < 0 || end < start || end > ext)
        return makeError("slice-out-of-bounds", "slice dim " + std::to_string(r.dim) + " [" + std::to_string(start) +
                                                    ", " + std::to_string(end) + ") of extent " + std::to_string(ext) +
                                                    " in " + str(r));
      int64_t outer, inner;
      around(x.dims, axis, outer, inner);
      Dense out{x.dtype, x.dims, {}};
      out.dims[size_t(axis)] = end - start;
      for (int64_t o = 0; o < outer; ++o)
        out.v.insert(out.v.end(), x.v.begin() + (o * ext + start) * inner, x.v.begin() + (o * ext + end) * inner);
      return out;
    }
    case RelOp::Reshape: {
      SP_ASSIGN(Dense x, evalDense(*r.args[0], src, scope));
      std::vector<int64_t> dims;
      int64_t n = 1;
      for (const auto& d : r.shape) {
        if (!d.isConcrete()) return makeError("symbolic-reshape", "reshape to " + ir::shapeStr(r.shape) + ": dims must be concrete to evaluate");
        dims.push_back(d.value());
        n *= d.value();
      }
      if (n != int64_t(x.v.size()))
        return makeError("reshape-size-mismatch", "reshape " + dimsStr(x.dims) + " to " + dimsStr(dims) + ": element counts differ");
      x.dims = dims;
      return x;
    }
    case RelOp::Permute: {
      SP_ASSIGN(Dense x, evalDense(*r.args[0], src, scope));
      int64_t rank = int64_t(x.dims.size());
      SP_TRY(checkPerm(r.perm, rank));
      Dense out{x.dtype, {}, std::vector<double>(x.v.size())};
      for (int64_t p : r.perm) out.dims.push_back(x.dims[size_t(p)]);
      auto inStrides = ir::stridesOf(x.dims);
      std::vector<int64_t> idx(size_t(rank), 0);
      for (size_t k = 0; k < out.v.size(); ++k) {
        int64_t off = 0;
        for (int64_t d = 0; d < rank; ++d) off += idx[size_t(d)] * inStrides[size_t(r.perm[size_t(d)])];
        out.v[k] = x.v[size_t(off)];
        for (int64_t d = rank - 1; d >= 0; --d) {
          if (++idx[size_t(d)] < out.dims[size_t(d)]) break;
          idx[size_t(d)] = 0;
        }
      }
      return out;
    }
    case RelOp::Scale: {
      SP_ASSIGN(Dense x, evalDense(*r.args[0], src, scope));
      for (double& v : x.v) v *= r.factor;
      return x;
    }
    case RelOp::For:
      return makeError("comprehension-outside-concat", "'" + str(r) + "' must be a part of concat or sum");
  }
  return makeError("internal", "unknown relation op");
}

}  // namespace

Result<ir::Tensor> evaluate(const Rel& r, const TensorSource& src, const RelScope& scope) {
  SP_ASSIGN(Dense d, evalDense(r, src, scope));
  return fromDense(d);
}

}  // namespace sp::rewrite

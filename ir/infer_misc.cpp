// Shape functions of sources, selection, encoding, losses, randomness and
// collectives.
#include <cmath>

#include "ir/infer_util.h"

namespace sp::ir {

Result<Types> inferConstant(const InferCtx& c) {
  const Tensor& v = attrTensor(c.attrs, "value");
  if (!v.defined()) return makeError("bad-attr", "value tensor is empty");
  return Types{v.type()};
}

// Number of elements of range(start, limit, delta).
Result<int64_t> rangeLength(double start, double limit, double delta) {
  if (delta == 0) return makeError("bad-attr", "range delta must not be 0");
  if (!std::isfinite(start) || !std::isfinite(limit) || !std::isfinite(delta))
    return makeError("bad-attr", "range start, limit and delta must be finite");
  double n = std::ceil((limit - start) / delta);
  if (n > double(kMaxElements))
    return makeError("bad-attr", "range has too many elements (" + std::to_string(n) + ")");
  return n > 0 ? int64_t(n) : int64_t(0);
}

Result<Types> inferRange(const InferCtx& c) {
  DType t = attrType(c.attrs, "dtype");
  if (t == DType::Bool) return makeError("dtype-mismatch", "range dtype must be numeric, got bool");
  SP_ASSIGN(int64_t n, rangeLength(attrFloat(c.attrs, "start"), attrFloat(c.attrs, "limit"),
                                   attrFloat(c.attrs, "delta")));
  return Types{{t, Shape{Dim(n)}}};
}

Result<Types> inferTopK(const InferCtx& c) {
  const TensorType& x = c.inputs[0];
  SP_TRY(requireNumeric(x, "input"));
  SP_ASSIGN(int64_t axis, normAxis(attrInt(c.attrs, "axis"), int64_t(x.shape.size()), "topk"));
  int64_t k = attrInt(c.attrs, "k");
  const Dim& d = x.shape[size_t(axis)];
  if (k < 0 || (d.isConcrete() && k > d.value()))
    return makeError("bad-attr", "k " + istr(k) + " is out of range for dim " + d.str() + " of axis " +
                                     istr(axis));
  Shape s = x.shape;
  s[size_t(axis)] = Dim(k);
  return Types{{x.dtype, s}, {DType::I64, s}};
}

Result<Types> inferOneHot(const InferCtx& c) {
  const TensorType& idx = c.inputs[0];
  SP_TRY(requireInteger(idx, "indices"));
  int64_t depth = attrInt(c.attrs, "depth");
  if (depth <= 0 || depth > kMaxElements)
    return makeError("bad-attr", "depth must be positive, got " + istr(depth));
  int64_t outRank = int64_t(idx.shape.size()) + 1;
  SP_ASSIGN(int64_t axis, normAxis(attrInt(c.attrs, "axis"), outRank, "one_hot"));
  Shape s = idx.shape;
  s.insert(s.begin() + axis, Dim(depth));
  return Types{{attrType(c.attrs, "dtype"), std::move(s)}};
}

Result<Types> inferCrossEntropy(const InferCtx& c) {
  const TensorType& x = c.inputs[0];
  const TensorType& t = c.inputs[1];
  SP_TRY(requireFloat(x, "logits"));
  SP_TRY(requireInteger(t, "target"));
  if (x.shape.size() < 2)
    return makeError("bad-rank", "logits must have rank >= 2 ([N, C, ...]), got " + x.str());
  Shape expect = x.shape;
  expect.erase(expect.begin() + 1);
  if (t.shape != expect)
    return makeError("shape-mismatch", "target " + t.str() + " does not match logits " + x.str() +
                                           " (expected " + shapeStr(expect) + ")");
  if (c.inputs.size() == 3) {
    const TensorType& w = c.inputs[2];
    SP_TRY(requireSameDType(x, w, "logits and weight"));
    if (w.shape != Shape{x.shape[1]})
      return makeError("shape-mismatch", "weight " + w.str() + " must have shape [" +
                                             x.shape[1].str() + "]");
  }
  const std::string& r = attrStr(c.attrs, "reduction");
  if (r == "none") return Types{{x.dtype, expect}};
  if (r != "sum" && r != "mean")
    return makeError("bad-attr", "reduction must be none, sum or mean, got '" + r + "'");
  return Types{{x.dtype, Shape{}}};
}

Result<Types> inferDropout(const InferCtx& c) {
  const TensorType& x = c.inputs[0];
  const TensorType& s = c.inputs[1];
  SP_TRY(requireFloat(x, "input"));
  SP_TRY(requireFloat(s, "random stream"));
  if (s.shape != x.shape)
    return makeError("shape-mismatch", "random stream " + s.str() + " must have the input's shape " +
                                           shapeStr(x.shape));
  double ratio = attrFloat(c.attrs, "ratio");
  if (!(ratio >= 0 && ratio < 1))
    return makeError("bad-attr", "ratio must be in [0, 1), got " + std::to_string(ratio));
  return Types{x, {DType::Bool, x.shape}};
}

// ---- collectives ----

static Result<int64_t> groupSizeOf(const InferCtx& c) {
  if (!c.groupSize)
    return makeError("no-group", "collective outside a distributed program");
  SP_ASSIGN(int64_t g, (*c.groupSize)(attrStr(c.attrs, "group")));
  if (g <= 0) return makeError("bad-group", "group size " + istr(g) + " is not positive");
  return g;
}

static Result<Dim> divideDim(const Dim& d, int64_t g, int64_t axis) {
  auto q = exactDiv(d, Dim(g));
  if (!q)
    return makeError("shape-mismatch", "dim " + istr(axis) + " of size " + d.str() +
                                           " is not divisible by group size " + istr(g));
  return *q;
}

Result<Types> inferAllGather(const InferCtx& c) {
  const TensorType& x = c.inputs[0];
  SP_ASSIGN(int64_t g, groupSizeOf(c));
  SP_ASSIGN(int64_t dim, normAxis(attrInt(c.attrs, "dim"), int64_t(x.shape.size()), "all_gather"));
  TensorType out = x;
  out.shape[size_t(dim)] = x.shape[size_t(dim)] * Dim(g);
  return Types{out};
}

static Status checkReduce(const InferCtx& c) {
  const std::string& r = attrStr(c.attrs, "reduce");
  if (r != "sum" && r != "avg" && r != "max" && r != "min")
    return makeError("bad-attr", "reduce must be sum, avg, max or min, got '" + r + "'");
  return requireNumeric(c.inputs[0], "input");
}

Result<Types> inferReduceScatter(const InferCtx& c) {
  const TensorType& x = c.inputs[0];
  SP_TRY(checkReduce(c));
  SP_ASSIGN(int64_t g, groupSizeOf(c));
  SP_ASSIGN(int64_t dim, normAxis(attrInt(c.attrs, "dim"), int64_t(x.shape.size()), "reduce_scatter"));
  TensorType out = x;
  SP_ASSIGN(out.shape[size_t(dim)], divideDim(x.shape[size_t(dim)], g, dim));
  return Types{out};
}

Result<Types> inferAllToAll(const InferCtx& c) {
  const TensorType& x = c.inputs[0];
  SP_ASSIGN(int64_t g, groupSizeOf(c));
  int64_t rank = int64_t(x.shape.size());
  SP_ASSIGN(int64_t sd, normAxis(attrInt(c.attrs, "split_dim"), rank, "all_to_all split_dim"));
  SP_ASSIGN(int64_t cd, normAxis(attrInt(c.attrs, "concat_dim"), rank, "all_to_all concat_dim"));
  TensorType out = x;
  SP_ASSIGN(Dim q, divideDim(x.shape[size_t(sd)], g, sd));
  if (sd != cd) {
    out.shape[size_t(sd)] = q;
    out.shape[size_t(cd)] = x.shape[size_t(cd)] * Dim(g);
  }
  return Types{out};
}

Result<Types> inferSend(const InferCtx& c) {
  if (attrInt(c.attrs, "peer") < 0)
    return makeError("bad-attr", "peer must be >= 0, got " + istr(attrInt(c.attrs, "peer")));
  return Types{};
}

Result<Types> inferRecv(const InferCtx& c) {
  if (attrInt(c.attrs, "peer") < 0)
    return makeError("bad-attr", "peer must be >= 0, got " + istr(attrInt(c.attrs, "peer")));
  const Shape& s = attrDims(c.attrs, "shape");
  for (const Dim& d : s)
    if (d.coef < 0) return makeError("bad-attr", "dim " + d.str() + " is negative");
  return Types{{attrType(c.attrs, "dtype"), s}};
}

}  // namespace sp::ir

// Shape functions of layout and indexing ops.
#include <algorithm>

#include "ir/infer_util.h"

namespace sp::ir {

Result<Types> inferReshape(const InferCtx& c) {
  const TensorType& x = c.inputs[0];
  const Shape& to = attrDims(c.attrs, "shape");
  for (const Dim& d : to)
    if (d.coef < 0 || d.coef > kMaxElements)
      return makeError("bad-attr", "target dim " + d.str() + " is out of range in " + shapeStr(to));
  auto nIn = numElements(x.shape);
  auto nOut = numElements(to);
  if (!nIn || !nOut || *nIn != *nOut)
    return makeError("shape-mismatch", "cannot reshape " + x.str() + " to " + shapeStr(to) +
                                           ": element counts differ");
  return Types{{x.dtype, to}};
}

Result<Types> inferTranspose(const InferCtx& c) {
  const TensorType& x = c.inputs[0];
  int64_t rank = int64_t(x.shape.size());
  std::vector<int64_t> perm = attrInts(c.attrs, "perm");
  if (perm.empty())  // ONNX default: reverse the dims
    for (int64_t i = rank - 1; i >= 0; --i) perm.push_back(i);
  std::vector<bool> seen(size_t(rank), false);
  bool valid = int64_t(perm.size()) == rank;
  for (int64_t p : perm) {
    if (!valid || p < 0 || p >= rank || seen[size_t(p)]) { valid = false; break; }
    seen[size_t(p)] = true;
  }
  if (!valid)
    return makeError("bad-attr", "perm " + intsStr(perm) + " is not a permutation of rank " + istr(rank));
  Shape out;
  for (int64_t p : perm) out.push_back(x.shape[size_t(p)]);
  return Types{{x.dtype, std::move(out)}};
}

// ONNX slice clamping on a concrete dim; returns the normalized start and the
// number of selected elements.
std::pair<int64_t, int64_t> sliceRange(int64_t start, int64_t end, int64_t step, int64_t d) {
  if (d == 0) return {0, 0};
  if (start < 0) start += d;  // d >= 0, so no overflow
  if (end < 0) end += d;
  int64_t len = 0;
  if (step > 0) {
    start = std::clamp<int64_t>(start, 0, d);
    end = std::clamp<int64_t>(end, 0, d);
    if (end > start) len = (end - start + step - 1) / step;
  } else {
    start = std::clamp<int64_t>(start, 0, d - 1);
    end = std::clamp<int64_t>(end, -1, d - 1);
    if (start > end) len = (start - end + (-step) - 1) / (-step);
  }
  return {start, len};
}

Result<Types> inferSlice(const InferCtx& c) {
  const TensorType& x = c.inputs[0];
  int64_t rank = int64_t(x.shape.size());
  const auto& starts = attrInts(c.attrs, "starts");
  const auto& ends = attrInts(c.attrs, "ends");
  std::vector<int64_t> axes = attrInts(c.attrs, "axes");
  std::vector<int64_t> steps = attrInts(c.attrs, "steps");
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(int64_t(i));
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
    return makeError("bad-attr", "starts, ends, axes and steps have different lengths " +
                                     istr(int64_t(starts.size())) + ", " + istr(int64_t(ends.size())) +
                                     ", " + istr(int64_t(axes.size())) + ", " +
                                     istr(int64_t(steps.size())));
  SP_ASSIGN(auto nax, normAxes(axes, rank));
  Shape out = x.shape;
  for (size_t i = 0; i < nax.size(); ++i) {
    int64_t st = starts[i], en = ends[i], step = steps[i];
    if (step == 0) return makeError("bad-attr", "slice step must not be 0");
    const Dim& d = x.shape[size_t(nax[i])];
    if (d.isConcrete()) {
      out[size_t(nax[i])] = Dim(sliceRange(st, en, step, d.value()).second);
      continue;
    }
    // Symbolic dim: only whole-dim slices (possibly strided or reversed) are
    // determinable.
    bool fullFwd = step > 0 && st == 0 && en >= kMaxElements;
    bool fullBwd = step < 0 && (st == -1 || st >= kMaxElements) && en <= -kMaxElements;
    std::optional<Dim> len;
    if (fullFwd || fullBwd) len = exactDiv(d, Dim(step > 0 ? step : -step));
    else if (step > 0 && en == 0 && st >= 0) len = Dim(0);
    if (!len)
      return makeError("symbolic-dim", "slice of symbolic dim " + d.str() + " with start " + istr(st) +
                                           ", end " + istr(en) + ", step " + istr(step) +
                                           " has no determinable size");
    out[size_t(nax[i])] = *len;
  }
  return Types{{x.dtype, std::move(out)}};
}

Result<Types> inferConcat(const InferCtx& c) {
  const TensorType& x = c.inputs[0];
  int64_t rank = int64_t(x.shape.size());
  SP_ASSIGN(int64_t axis, normAxis(attrInt(c.attrs, "axis"), rank, "concat"));
  Shape out = x.shape;
  for (size_t i = 1; i < c.inputs.size(); ++i) {
    const TensorType& t = c.inputs[i];
    SP_TRY(requireSameDType(x, t, "inputs"));
    bool same = t.shape.size() == x.shape.size();
    for (int64_t k = 0; same && k < rank; ++k)
      if (k != axis && t.shape[size_t(k)] != x.shape[size_t(k)]) same = false;
    if (!same)
      return makeError("shape-mismatch", "input " + istr(int64_t(i)) + " " + t.str() +
                                             " does not match input 0 " + x.str() +
                                             " outside axis " + istr(axis));
    auto sum = addDims(out[size_t(axis)], t.shape[size_t(axis)]);
    if (!sum)
      return makeError("symbolic-dim", "cannot add dims " + out[size_t(axis)].str() + " and " +
                                           t.shape[size_t(axis)].str() + " along axis " + istr(axis));
    out[size_t(axis)] = *sum;
  }
  return Types{{x.dtype, std::move(out)}};
}

Result<Types> inferSplit(const InferCtx& c) {
  const TensorType& x = c.inputs[0];
  SP_ASSIGN(int64_t axis, normAxis(attrInt(c.attrs, "axis"), int64_t(x.shape.size()), "split"));
  const auto& sizes = attrInts(c.attrs, "sizes");
  if (sizes.empty()) return makeError("bad-attr", "sizes must not be empty");
  int64_t total = 0;
  for (int64_t s : sizes) {
    if (s < 0) return makeError("bad-attr", "split size " + istr(s) + " is negative");
    total += s;
  }
  const Dim& d = x.shape[size_t(axis)];
  if (d != Dim(total))
    return makeError("shape-mismatch", "split sizes " + intsStr(sizes) + " sum to " + istr(total) +
                                           ", not to dim " + d.str() + " of axis " + istr(axis));
  Types out;
  for (int64_t s : sizes) {
    Shape sh = x.shape;
    sh[size_t(axis)] = Dim(s);
    out.push_back({x.dtype, std::move(sh)});
  }
  return out;
}

Result<Types> inferExpand(const InferCtx& c) {
  const TensorType& x = c.inputs[0];
  const Shape& to = attrDims(c.attrs, "shape");
  for (const Dim& d : to)
    if (d.coef < 0) return makeError("bad-attr", "target dim " + d.str() + " is negative");
  auto s = broadcastShapes(x.shape, to);
  if (!s) return makeError("shape-mismatch", "cannot expand " + x.str() + " to " + shapeStr(to));
  return Types{{x.dtype, std::move(*s)}};
}

Result<Types> inferSqueeze(const InferCtx& c) {
  const TensorType& x = c.inputs[0];
  int64_t rank = int64_t(x.shape.size());
  SP_ASSIGN(auto axes, normAxes(attrInts(c.attrs, "axes"), rank));
  bool all = axes.empty();
  Shape out;
  for (int64_t i = 0; i < rank; ++i) {
    const Dim& d = x.shape[size_t(i)];
    bool listed = std::find(axes.begin(), axes.end(), i) != axes.end();
    if (listed && d != Dim(1))
      return makeError("shape-mismatch", "cannot squeeze axis " + istr(i) + " of size " + d.str() +
                                             " in " + x.str());
    if (listed || (all && d == Dim(1))) continue;
    out.push_back(d);
  }
  return Types{{x.dtype, std::move(out)}};
}

Result<Types> inferUnsqueeze(const InferCtx& c) {
  const TensorType& x = c.inputs[0];
  const auto& axesAttr = attrInts(c.attrs, "axes");
  int64_t outRank = int64_t(x.shape.size() + axesAttr.size());
  SP_ASSIGN(auto axes, normAxes(axesAttr, outRank));
  Shape out;
  size_t k = 0;
  for (int64_t i = 0; i < outRank; ++i) {
    if (std::find(axes.begin(), axes.end(), i) != axes.end()) out.push_back(Dim(1));
    else out.push_back(x.shape[k++]);
  }
  return Types{{x.dtype, std::move(out)}};
}

Result<Types> inferGather(const InferCtx& c) {
  const TensorType& x = c.inputs[0];
  const TensorType& idx = c.inputs[1];
  SP_TRY(requireInteger(idx, "indices"));
  int64_t rank = int64_t(x.shape.size());
  SP_ASSIGN(int64_t axis, normAxis(attrInt(c.attrs, "axis"), rank, "gather"));
  Shape out(x.shape.begin(), x.shape.begin() + axis);
  out.insert(out.end(), idx.shape.begin(), idx.shape.end());
  out.insert(out.end(), x.shape.begin() + axis + 1, x.shape.end());
  return Types{{x.dtype, std::move(out)}};
}

// Indices of gather_elements / scatter_elements: same rank as data, and no
// larger than data outside the axis.
static Result<int64_t> checkElementIndices(const InferCtx& c, const TensorType& x,
                                           const TensorType& idx) {
  SP_TRY(requireInteger(idx, "indices"));
  int64_t rank = int64_t(x.shape.size());
  SP_ASSIGN(int64_t axis, normAxis(attrInt(c.attrs, "axis"), rank, std::string(opName(c.op))));
  if (idx.shape.size() != x.shape.size())
    return makeError("shape-mismatch", "indices " + idx.str() + " and data " + x.str() +
                                           " have different ranks");
  for (int64_t k = 0; k < rank; ++k) {
    if (k == axis) continue;
    const Dim& di = idx.shape[size_t(k)];
    const Dim& dx = x.shape[size_t(k)];
    bool fits = di == dx || (di.isConcrete() && dx.isConcrete() && di.value() <= dx.value());
    if (!fits)
      return makeError("shape-mismatch", "indices " + idx.str() + " exceed data " + x.str() +
                                             " on axis " + istr(k));
  }
  return axis;
}

Result<Types> inferGatherElements(const InferCtx& c) {
  SP_TRY(checkElementIndices(c, c.inputs[0], c.inputs[1]));
  return Types{{c.inputs[0].dtype, c.inputs[1].shape}};
}

Result<Types> inferScatterElements(const InferCtx& c) {
  const TensorType& x = c.inputs[0];
  SP_TRY(checkElementIndices(c, x, c.inputs[1]));
  const TensorType& upd = c.inputs[2];
  SP_TRY(requireSameDType(x, upd, "data and updates"));
  if (upd.shape != c.inputs[1].shape)
    return makeError("shape-mismatch", "updates " + upd.str() + " and indices " + c.inputs[1].str() +
                                           " have different shapes");
  const std::string& r = attrStr(c.attrs, "reduction");
  if (r != "none" && r != "add" && r != "mul" && r != "max" && r != "min")
    return makeError("bad-attr", "reduction must be none, add, mul, max or min, got '" + r + "'");
  return Types{x};
}

}  // namespace sp::ir

// Layout, indexing and copy ops: view, transpose, slice, cat, split, index...
#include <algorithm>
#include <limits>

#include "frontend/fx_ops.h"

namespace sp::frontend::fx {

using ir::DType;
using ir::OpKind;
using ir::TensorType;

namespace {

constexpr int64_t kEnd = std::numeric_limits<int64_t>::max();

Result<int64_t> normDim(Emitter& e, int64_t d, int64_t rank) {
  auto r = ir::normAxis(d, rank, e.op);
  if (!r) return e.error("fx-dim", "dim " + std::to_string(d) + " is out of range for rank " +
                                       std::to_string(rank));
  return *r;
}

Result<int64_t> concreteDim(Emitter& e, const TRef& x, int64_t d) {
  const ir::Dim& dim = x.type.shape[size_t(d)];
  if (!dim.isConcrete())
    return e.error("fx-symbolic", "dim " + std::to_string(d) + " of " + x.type.str() +
                                      " must be concrete here");
  return dim.value();
}

// Python slice bounds clamped to [0, size].
int64_t clampBound(int64_t v, int64_t size) {
  if (v < 0) v += size;
  return std::max<int64_t>(0, std::min(v, size));
}

}  // namespace

Status mapView(Emitter& e) {
  SP_ASSIGN(TRef x, e.tensor(0, "self"));
  SP_ASSIGN(TensorType t, e.outType(0));
  return e.out(0, OpKind::Reshape, {x}, {{"shape", t.shape}});
}

Status mapT(Emitter& e) {
  SP_ASSIGN(TRef x, e.tensor(0, "self"));
  if (x.rank() < 2) return e.outValue(0, x);
  return e.out(0, OpKind::Transpose, {x}, {{"perm", std::vector<int64_t>{1, 0}}});
}

Status mapTranspose(Emitter& e) {
  SP_ASSIGN(TRef x, e.tensor(0, "self"));
  if (x.rank() == 0) return e.outValue(0, x);
  SP_ASSIGN(int64_t d0, e.integer(1, "dim0"));
  SP_ASSIGN(int64_t d1, e.integer(2, "dim1"));
  SP_ASSIGN(d0, normDim(e, d0, x.rank()));
  SP_ASSIGN(d1, normDim(e, d1, x.rank()));
  std::vector<int64_t> perm(size_t(x.rank()));
  for (size_t k = 0; k < perm.size(); ++k) perm[k] = int64_t(k);
  std::swap(perm[size_t(d0)], perm[size_t(d1)]);
  return e.out(0, OpKind::Transpose, {x}, {{"perm", perm}});
}

Status mapPermute(Emitter& e) {
  SP_ASSIGN(TRef x, e.tensor(0, "self"));
  SP_ASSIGN(auto dims, e.ints(1, "dims"));
  for (auto& d : dims) { SP_ASSIGN(d, normDim(e, d, x.rank())); }
  return e.out(0, OpKind::Transpose, {x}, {{"perm", dims}});
}

Status mapExpand(Emitter& e) {
  SP_ASSIGN(TRef x, e.tensor(0, "self"));
  SP_ASSIGN(TensorType t, e.outType(0));
  return e.out(0, OpKind::Expand, {x}, {{"shape", t.shape}});
}

Status mapUnsqueeze(Emitter& e) {
  SP_ASSIGN(TRef x, e.tensor(0, "self"));
  SP_ASSIGN(int64_t d, e.integer(1, "dim"));
  SP_ASSIGN(d, normDim(e, d, x.rank() + 1));
  return e.out(0, OpKind::Unsqueeze, {x}, {{"axes", std::vector<int64_t>{d}}});
}

// aten.squeeze removes only the listed dims that have size 1.
Status mapSqueeze(Emitter& e) {
  SP_ASSIGN(TRef x, e.tensor(0, "self"));
  std::vector<int64_t> dims;
  if (e.has(1, "dim")) {
    SP_ASSIGN(dims, e.ints(1, "dim"));
  } else {
    for (int64_t d = 0; d < x.rank(); ++d) dims.push_back(d);
  }
  std::vector<int64_t> axes;
  for (int64_t d : dims) {
    if (x.rank() == 0) break;
    SP_ASSIGN(d, normDim(e, d, x.rank()));
    if (x.type.shape[size_t(d)] == ir::Dim(1) &&
        std::find(axes.begin(), axes.end(), d) == axes.end())
      axes.push_back(d);
  }
  std::sort(axes.begin(), axes.end());
  if (axes.empty()) return e.outValue(0, x);
  return e.out(0, OpKind::Squeeze, {x}, {{"axes", axes}});
}

Status mapCat(Emitter& e) {
  SP_ASSIGN(auto list, e.tensorList(0, "tensors"));
  SP_ASSIGN(TensorType t, e.outType(0));
  SP_ASSIGN(int64_t d, e.integer(1, "dim", 0));
  SP_ASSIGN(d, normDim(e, d, int64_t(t.shape.size())));
  std::vector<TRef> in;
  for (const auto& x : list) {
    if (!x) return e.error("fx-arg", "cat of None");
    // Legacy: 1-D empty tensors are skipped by cat.
    if (x->rank() == 1 && x->type.shape[0] == ir::Dim(0) && t.shape.size() != 1) continue;
    in.push_back(e.cast(*x, t.dtype));
  }
  if (in.size() == 1) return e.outValue(0, in[0]);
  return e.out(0, OpKind::Concat, in, {{"axis", d}});
}

// stack(tensors, dim=0): each unsqueezed at dim, concatenated there.
Status mapStack(Emitter& e) {
  SP_ASSIGN(auto list, e.tensorList(0, "tensors"));
  SP_ASSIGN(TensorType t, e.outType(0));
  SP_ASSIGN(int64_t d, e.integer(1, "dim", 0));
  SP_ASSIGN(d, normDim(e, d, int64_t(t.shape.size())));
  std::vector<TRef> in;
  for (const auto& x : list) {
    if (!x) return e.error("fx-arg", "stack of None");
    in.push_back(e.unsqueeze(e.cast(*x, t.dtype), {d}));
  }
  if (in.empty()) return e.error("fx-arg", "stack of no tensors");
  if (in.size() == 1) return e.outValue(0, in[0]);
  return e.out(0, OpKind::Concat, in, {{"axis", d}});
}

static Status emitSplit(Emitter& e, const TRef& x, int64_t d, std::vector<int64_t> sizes) {
  return e.outAll(OpKind::Split, {x}, {{"axis", d}, {"sizes", sizes}}, sizes.size());
}

// Pieces of `size` along dim d (of extent n), the last smaller: one
// output each (split.Tensor, chunk).
static Status splitEvery(Emitter& e, const TRef& x, int64_t d, int64_t n, int64_t size) {
  std::vector<int64_t> sizes;
  for (int64_t s = 0; s < n; s += size) sizes.push_back(std::min(size, n - s));
  if (sizes.empty()) sizes.push_back(0);
  e.outNames.resize(std::max(e.outNames.size(), sizes.size()));
  e.outBound.resize(e.outNames.size());
  return emitSplit(e, x, d, sizes);
}

Status mapSplit(Emitter& e) {
  SP_ASSIGN(TRef x, e.tensor(0, "self"));
  SP_ASSIGN(int64_t size, e.integer(1, "split_size"));
  SP_ASSIGN(int64_t d, e.integer(2, "dim", 0));
  SP_ASSIGN(d, normDim(e, d, x.rank()));
  SP_ASSIGN(int64_t n, concreteDim(e, x, d));
  if (size <= 0) return e.error("fx-arg", "split size " + std::to_string(size) + " must be positive");
  return splitEvery(e, x, d, n, size);
}

// chunk(x, chunks, dim): pieces of ceil(n / chunks), the last smaller, as
// few as that takes (torch.chunk).
Status mapChunk(Emitter& e) {
  SP_ASSIGN(TRef x, e.tensor(0, "self"));
  SP_ASSIGN(int64_t chunks, e.integer(1, "chunks"));
  SP_ASSIGN(int64_t d, e.integer(2, "dim", 0));
  SP_ASSIGN(d, normDim(e, d, x.rank()));
  SP_ASSIGN(int64_t n, concreteDim(e, x, d));
  if (chunks <= 0) return e.error("fx-arg", "chunk count " + std::to_string(chunks) + " must be positive");
  return splitEvery(e, x, d, n, std::max<int64_t>(1, (n + chunks - 1) / chunks));
}

// narrow(x, dim, start, length): the slice [start, start + length).
Status mapNarrow(Emitter& e) {
  SP_ASSIGN(TRef x, e.tensor(0, "self"));
  SP_ASSIGN(int64_t d, e.integer(1, "dim"));
  SP_ASSIGN(d, normDim(e, d, x.rank()));
  SP_ASSIGN(int64_t start, e.integer(2, "start"));
  SP_ASSIGN(int64_t length, e.integer(3, "length"));
  SP_ASSIGN(int64_t n, concreteDim(e, x, d));
  if (start < 0) start += n;
  if (start < 0 || length < 0 || start > n || length > n - start)
    return e.error("fx-arg", "narrow of [" + std::to_string(start) + ", +" + std::to_string(length) +
                                 ") is outside dim " + std::to_string(d) + " of size " + std::to_string(n));
  return e.out(0, OpKind::Slice, {x},
               {{"starts", std::vector<int64_t>{start}}, {"ends", std::vector<int64_t>{start + length}},
                {"axes", std::vector<int64_t>{d}}, {"steps", std::vector<int64_t>{1}}});
}

Status mapSplitWithSizes(Emitter& e) {
  SP_ASSIGN(TRef x, e.tensor(0, "self"));
  SP_ASSIGN(auto sizes, e.ints(1, "split_sizes"));
  SP_ASSIGN(int64_t d, e.integer(2, "dim", 0));
  SP_ASSIGN(d, normDim(e, d, x.rank()));
  e.outNames.resize(std::max(e.outNames.size(), sizes.size()));
  e.outBound.resize(e.outNames.size());
  return emitSplit(e, x, d, sizes);
}

Status mapSlice(Emitter& e) {
  SP_ASSIGN(TRef x, e.tensor(0, "self"));
  SP_ASSIGN(int64_t d, e.integer(1, "dim", 0));
  SP_ASSIGN(d, normDim(e, d, x.rank()));
  SP_ASSIGN(int64_t start, e.integer(2, "start", 0));
  SP_ASSIGN(int64_t end, e.integer(3, "end", kEnd));
  SP_ASSIGN(int64_t step, e.integer(4, "step", 1));
  if (step <= 0) return e.error("fx-arg", "slice step " + std::to_string(step) + " must be positive");
  // x[:, 0:MAX] (Megatron's `output_parallel[mask, :]`) is x itself.
  const ir::Dim& dim = x.type.shape[size_t(d)];
  if (step == 1 && dim.isConcrete() && clampBound(start, dim.value()) == 0 &&
      clampBound(end, dim.value()) == dim.value())
    return e.outValue(0, x);
  return e.out(0, OpKind::Slice, {x},
               {{"starts", std::vector<int64_t>{start}}, {"ends", std::vector<int64_t>{end}},
                {"axes", std::vector<int64_t>{d}}, {"steps", std::vector<int64_t>{step}}});
}

static TRef sliceOf(Emitter& e, const TRef& x, int64_t d, int64_t start, int64_t end) {
  ir::Shape s = x.type.shape;
  s[size_t(d)] = ir::Dim(end - start);
  return e.emit(OpKind::Slice, {x},
                {{"starts", std::vector<int64_t>{start}}, {"ends", std::vector<int64_t>{end}},
                 {"axes", std::vector<int64_t>{d}}, {"steps", std::vector<int64_t>{1}}},
                TensorType{x.dtype(), s}, "slice");
}

namespace {

// x with src written over x[start:end:step] along dim d (slice_scatter,
// slice_backward): a concat of x's untouched parts around src for step 1,
// else a scatter at the indices of the range.
Status scatterSlice(Emitter& e, TRef x, TRef src, int64_t d, int64_t start, int64_t end, int64_t step) {
  SP_ASSIGN(d, normDim(e, d, x.rank()));
  SP_ASSIGN(int64_t n, concreteDim(e, x, d));
  if (step <= 0) return e.error("fx-arg", "slice step " + std::to_string(step) + " must be positive");
  start = clampBound(start, n);
  end = std::max(start, clampBound(end, n));
  TRef s = e.cast(src, x.dtype());
  if (step == 1) {
    std::vector<TRef> parts;
    if (start > 0) parts.push_back(sliceOf(e, x, d, 0, start));
    parts.push_back(s);
    if (end < n) parts.push_back(sliceOf(e, x, d, end, n));
    if (parts.size() == 1) return e.outValue(0, s);
    return e.out(0, OpKind::Concat, parts, {{"axis", d}});
  }
  int64_t count = (end - start + step - 1) / step;
  TRef r = e.emit(OpKind::Range, {},
                  {{"start", double(start)}, {"limit", double(start + count * step)},
                   {"delta", double(step)}, {"dtype", DType::I64}},
                  TensorType{DType::I64, {ir::Dim(count)}}, "range");
  ir::Shape rs(size_t(x.rank()), ir::Dim(1));
  rs[size_t(d)] = ir::Dim(count);
  TRef idx = e.expand(e.reshape(r, rs), s.type.shape);
  return e.out(0, OpKind::ScatterElements, {x, idx, s}, {{"axis", d}});
}

}  // namespace

Status mapSliceScatter(Emitter& e) {
  SP_ASSIGN(TRef x, e.tensor(0, "self"));
  SP_ASSIGN(TRef src, e.tensor(1, "src"));
  SP_ASSIGN(int64_t d, e.integer(2, "dim", 0));
  SP_ASSIGN(int64_t start, e.integer(3, "start", 0));
  SP_ASSIGN(int64_t end, e.integer(4, "end", kEnd));
  SP_ASSIGN(int64_t step, e.integer(5, "step", 1));
  return scatterSlice(e, x, src, d, start, end, step);
}

// The gradient of x[start:end:step] along dim: grad_output written into
// zeros of the input's sizes.
Status mapSliceBackward(Emitter& e) {
  SP_ASSIGN(TRef g, e.tensor(0, "grad_output"));
  SP_ASSIGN(std::vector<int64_t> sizes, e.ints(1, "input_sizes"));
  SP_ASSIGN(int64_t d, e.integer(2, "dim"));
  SP_ASSIGN(int64_t start, e.integer(3, "start"));
  SP_ASSIGN(int64_t end, e.integer(4, "end"));
  SP_ASSIGN(int64_t step, e.integer(5, "step", 1));
  if (int64_t(sizes.size()) != g.rank())
    return e.error("fx-arg", "slice_backward: input_sizes has " + std::to_string(sizes.size()) +
                                 " dims, grad_output " + std::to_string(g.rank()));
  ir::Shape shape(sizes.begin(), sizes.end());
  // Zeros through a unit-dim reshape, then expand (the form the engine sees
  // the rotary backward's zero blocks in; a rank-0 expand leaves the Llama
  // TP 4 training step inconclusive).
  TRef zeros = e.expand(e.reshape(e.constant(g.dtype(), 0), ir::Shape(sizes.size(), ir::Dim(1))), shape);
  return scatterSlice(e, zeros, g, d, start, end, step);
}

// unbind(x, dim=0) -> one tensor per index along dim, dim removed.
Status mapUnbind(Emitter& e) {
  SP_ASSIGN(TRef x, e.tensor(0, "self"));
  SP_ASSIGN(int64_t d, e.integer(1, "dim", 0));
  SP_ASSIGN(d, normDim(e, d, x.rank()));
  SP_ASSIGN(int64_t n, concreteDim(e, x, d));
  for (int64_t i = 0; i < n; ++i) {
    if (!e.wanted(size_t(i))) continue;
    SP_TRY(e.out(size_t(i), OpKind::Squeeze, {sliceOf(e, x, d, i, i + 1)}, {{"axes", std::vector<int64_t>{d}}}));
  }
  return okStatus();
}

Status mapSelect(Emitter& e) {
  SP_ASSIGN(TRef x, e.tensor(0, "self"));
  SP_ASSIGN(int64_t d, e.integer(1, "dim"));
  SP_ASSIGN(d, normDim(e, d, x.rank()));
  SP_ASSIGN(int64_t n, concreteDim(e, x, d));
  SP_ASSIGN(int64_t i, e.integer(2, "index"));
  if (i < -n || i >= n)
    return e.error("fx-index", "index " + std::to_string(i) + " is out of range for size " + std::to_string(n));
  if (i < 0) i += n;
  TRef s = sliceOf(e, x, d, i, i + 1);
  return e.out(0, OpKind::Squeeze, {s}, {{"axes", std::vector<int64_t>{d}}});
}

// Is index(x, [arange(0, n), t]) a per-row pick: x 2-D [n, m], the first
// index the range 0..n-1 (an arange node of this capture) and t of shape [n]?
static bool isRowPick(Emitter& e, const TRef& x, const std::vector<std::optional<TRef>>& list) {
  if (x.rank() != 2 || list.size() != 2 || !list[0] || !list[1]) return false;
  const ir::Dim& n = x.type.shape[0];
  if (!n.isConcrete() || list[0]->type.shape != ir::Shape{n} || list[1]->type.shape != ir::Shape{n})
    return false;
  const PendingOp* def = e.producer(list[0]->name);
  if (!def || def->op != OpKind::Range) return false;
  auto num = [&](const char* k) { return std::get<double>(def->attrs.at(k)); };
  return num("start") == 0 && num("delta") == 1 && num("limit") == double(n.value());
}

// x[arange(n), t] = squeeze(gather_elements(x, unsqueeze(t, 1), axis 1), 1):
// the same values as the linearized gather, in a form the verifier's
// lemmas can split along dim 1 (vocab-parallel cross entropy).
static Status mapRowPick(Emitter& e, const TRef& x, const TRef& t) {
  TRef idx = e.unsqueeze(e.cast(t, DType::I64), {1});
  ir::Shape gs = idx.type.shape;
  TRef g = e.emit(OpKind::GatherElements, {x, idx}, {{"axis", int64_t(1)}},
                  TensorType{x.dtype(), gs}, "pick");
  return e.out(0, OpKind::Squeeze, {g}, {{"axes", std::vector<int64_t>{1}}});
}

// x[..., i0, i1, ...] with adjacent integer index tensors starting at dim p:
// one index is a gather along p; several are linearized over the indexed
// dims (row-major) and gathered from x with those dims merged.
Status mapIndex(Emitter& e) {
  SP_ASSIGN(TRef x, e.tensor(0, "self"));
  SP_ASSIGN(auto list, e.tensorList(1, "indices"));
  std::vector<int64_t> pos;
  for (size_t k = 0; k < list.size(); ++k)
    if (list[k]) pos.push_back(int64_t(k));
  if (pos.empty()) return e.outValue(0, x);
  for (size_t k = 1; k < pos.size(); ++k)
    if (pos[k] != pos[k - 1] + 1)
      return e.error("fx-unsupported", "index with non-adjacent index tensors is not supported");
  for (int64_t p : pos) {
    DType t = list[size_t(p)]->dtype();
    if (t == DType::Bool || t == DType::U8)
      return e.error("fx-unsupported", "boolean mask indexing has a data-dependent shape");
    if (!ir::isInteger(t)) return e.error("fx-arg", "index tensors must be integers");
  }
  int64_t p0 = pos[0], k = int64_t(pos.size());
  if (p0 + k > x.rank()) return e.error("fx-index", "too many indices for a tensor of rank " + std::to_string(x.rank()));
  if (k == 1) return e.out(0, OpKind::Gather, {x, *list[size_t(p0)]}, {{"axis", p0}});
  if (isRowPick(e, x, list)) return mapRowPick(e, x, *list[1]);
  // Linearize: flat = sum_j idx_j * stride_j over the indexed dims.
  std::vector<int64_t> sizes;
  for (int64_t j = 0; j < k; ++j) {
    SP_ASSIGN(int64_t n, concreteDim(e, x, p0 + j));
    sizes.push_back(n);
  }
  std::optional<TRef> flat;
  int64_t stride = 1;
  for (int64_t j = k - 1; j >= 0; --j) {
    TRef idx = e.cast(*list[size_t(p0 + j)], DType::I64);
    if (stride != 1) idx = e.binary(OpKind::Mul, idx, e.constant(DType::I64, double(stride)));
    flat = flat ? e.binary(OpKind::Add, *flat, idx) : idx;
    stride *= sizes[size_t(j)];
  }
  ir::Shape merged;
  for (int64_t d = 0; d < p0; ++d) merged.push_back(x.type.shape[size_t(d)]);
  merged.push_back(ir::Dim(stride));
  for (int64_t d = p0 + k; d < x.rank(); ++d) merged.push_back(x.type.shape[size_t(d)]);
  return e.out(0, OpKind::Gather, {e.reshape(x, merged), *flat}, {{"axis", p0}});
}

std::string maskedShapeStr(const ir::Shape& x, int64_t p, int64_t r) {
  std::string out = "[";
  for (int64_t d = 0; d < int64_t(x.size()); ++d) {
    if (d > p && d < p + r) continue;
    out += std::string(d ? ", " : "") + (d == p ? std::string("n") : x[size_t(d)].str());
  }
  return out + "]";
}

// x[..., mask, ...] = v, mask of rank r over dims p.. of x: where(mask, v, x),
// the mask unsqueezed over the dims after it. v must broadcast to the
// selected elements' shape for any count n of them (x's dims around the
// mask, and 1 or nothing for n), as torch requires; it is expanded to that
// shape with n = 1 and given the mask's dims as 1s where the mask spans
// several dims and v reaches before it.
static Status putMask(Emitter& e, const TRef& x, const TRef& mask, int64_t p, TRef v, bool acc) {
  const int64_t r = mask.rank();
  bool fits = r > 0 && p + r <= x.rank();
  for (int64_t d = 0; fits && d < r; ++d) fits = mask.type.shape[size_t(d)] == x.type.shape[size_t(p + d)];
  if (!fits)
    return e.error("fx-unsupported", "index_put mask " + mask.type.str() + " at dim " + std::to_string(p) +
                                         " must match dims of " + x.type.str());
  ir::Shape one(x.type.shape.begin(), x.type.shape.begin() + p);
  one.push_back(ir::Dim(1));
  one.insert(one.end(), x.type.shape.begin() + p + r, x.type.shape.end());
  auto b = broadcastShapes(v.type.shape, one);
  if (!b || *b != one)
    return e.error("fx-unsupported", "index_put values " + v.type.str() + " must broadcast to " +
                                         maskedShapeStr(x.type.shape, p, r) + " (the selected elements of " +
                                         x.type.str() + ", n of them)");
  const int64_t after = x.rank() - p - r;
  if (v.rank() > after + 1) {
    ir::Shape full = one;
    full.insert(full.begin() + p, size_t(r - 1), ir::Dim(1));
    v = e.reshape(e.expand(v, one), full);
  }
  std::vector<int64_t> axes;
  for (int64_t d = 0; d < after; ++d) axes.push_back(r + d);
  TRef m = e.unsqueeze(mask, axes);
  if (acc) v = e.binary(OpKind::Add, x, v);
  return e.out(0, OpKind::Where, {m, v, x});
}

// x[..., idx, ...] = v, idx a 1-d integer index on dim p: a scatter along
// p of v broadcast to the indexed shape (reduction add if accumulating).
static Status putIndex(Emitter& e, const TRef& x, const TRef& idx, int64_t p, const TRef& v, bool acc) {
  if (!ir::isInteger(idx.dtype()) || idx.rank() != 1 || p >= x.rank())
    return e.error("fx-unsupported", "index_put with index " + idx.type.str() + " at dim " + std::to_string(p) +
                                         " of " + x.type.str() + " is not supported (a 1-d integer index only)");
  ir::Shape us = x.type.shape;
  us[size_t(p)] = idx.type.shape[0];
  ir::Shape is(size_t(x.rank()), ir::Dim(1));
  is[size_t(p)] = idx.type.shape[0];
  auto b = broadcastShapes(v.type.shape, us);
  if (!b || *b != us)
    return e.error("fx-unsupported", "index_put values " + v.type.str() + " must broadcast to " +
                                         ir::shapeStr(us));
  TRef ix = e.expand(e.reshape(e.cast(idx, DType::I64), is), us);
  return e.out(0, OpKind::ScatterElements, {x, ix, e.expand(v, us)},
               {{"axis", p}, {"reduction", std::string(acc ? "add" : "none")}});
}

// index_put(x, indices, v): one index tensor, after None entries for the
// dims it leaves whole (`x[:, m] = v`): a boolean mask as where, a 1-d
// integer index as a scatter; x[arange(n), t] = v on a 2-D x as a scatter
// along dim 1.
Status mapIndexPut(Emitter& e) {
  SP_ASSIGN(TRef x, e.tensor(0, "self"));
  SP_ASSIGN(auto list, e.tensorList(1, "indices"));
  SP_ASSIGN(TRef v, e.tensor(2, "values"));
  SP_ASSIGN(bool acc, e.boolean(3, "accumulate", false));
  // x[arange(n), t] = v: one element per row, a scatter along dim 1.
  if (isRowPick(e, x, list)) {
    ir::Shape n{x.type.shape[0]};
    auto b = broadcastShapes(v.type.shape, n);
    if (!b || *b != n)
      return e.error("fx-unsupported", "index_put values " + v.type.str() + " must broadcast to " + ir::shapeStr(n) +
                                           " (one per row of " + x.type.str() + ")");
    TRef idx = e.unsqueeze(e.cast(*list[1], DType::I64), {1});
    TRef vals = e.unsqueeze(e.expand(e.cast(v, x.dtype()), n), {1});
    return e.out(0, OpKind::ScatterElements, {x, idx, vals},
                 {{"axis", int64_t(1)}, {"reduction", std::string(acc ? "add" : "none")}});
  }
  std::vector<int64_t> given;
  for (size_t k = 0; k < list.size(); ++k)
    if (list[k]) given.push_back(int64_t(k));
  if (given.size() != 1)
    return e.error("fx-unsupported", "index_put supports one index tensor (after None entries), got " +
                                         std::to_string(given.size()));
  const int64_t p = given[0];
  const TRef idx = *list[size_t(p)];
  if (idx.dtype() == DType::U8)
    return e.error("fx-unsupported", "index_put with a u8 index (torch reads it as a mask, deprecated) is not "
                                     "supported; a b8 mask is");
  v = e.cast(v, x.dtype());
  if (idx.dtype() == DType::Bool) return putMask(e, x, idx, p, v, acc);
  return putIndex(e, x, idx, p, v, acc);
}

// x repeated `times` times along dim d, each position's copies together
// (torch.repeat_interleave with an int): unsqueeze after d, expand, merge:
// the view form of Megatron's and Hugging Face's KV-head repeat.
static Status repeatView(Emitter& e, const TRef& x, int64_t d, int64_t times) {
  ir::Shape ex = x.type.shape;
  ex.insert(ex.begin() + d + 1, ir::Dim(times));
  ir::Shape merged = x.type.shape;
  merged[size_t(d)] = merged[size_t(d)] * ir::Dim(times);
  TRef u = e.unsqueeze(x, {d + 1});
  return e.out(0, OpKind::Reshape, {e.expand(u, ex)}, {{"shape", merged}});
}

// gather(x, dim, index): out[..., j, ...] = x[..., index[..., j, ...], ...]
// along dim, the IR's gather_elements (the index no larger than x off dim,
// as torch requires; torch rejects negative indices, which the IR wraps, so
// the two agree wherever torch computes). sparse_grad changes only the
// backward's layout.
Status mapGatherDim(Emitter& e) {
  SP_ASSIGN(TRef x, e.tensor(0, "self"));
  SP_ASSIGN(int64_t d, e.integer(1, "dim"));
  SP_ASSIGN(TRef idx, e.tensor(2, "index"));
  SP_ASSIGN(bool sparse, e.boolean(3, "sparse_grad", false));
  (void)sparse;
  if (x.rank() == 0 || idx.rank() != x.rank())
    return e.error("fx-unsupported", "gather of " + x.type.str() + " by index " + idx.type.str() +
                                         ": the index must have the input's rank (>= 1)");
  if (!ir::isInteger(idx.dtype())) return e.error("fx-arg", "gather index must be an integer tensor");
  SP_ASSIGN(d, normDim(e, d, x.rank()));
  return e.out(0, OpKind::GatherElements, {x, idx}, {{"axis", d}});
}

// repeat(x, repeats): x tiled, out[..., j, ...] = x[..., j mod n, ...] on
// each dim (len(repeats) >= rank; extra leading repeats add dims, as
// torch). A repeat axis is unsqueezed *before* each repeated dim, expanded
// and merged with it (ONNX Tile's form; repeat_interleave puts it after).
Status mapRepeat(Emitter& e) {
  SP_ASSIGN(TRef x, e.tensor(0, "self"));
  SP_ASSIGN(auto reps, e.ints(1, "repeats"));
  if (int64_t(reps.size()) < x.rank())
    return e.error("fx-arg", "repeat: " + std::to_string(reps.size()) + " repeat counts for a tensor of rank " +
                                 std::to_string(x.rank()) + " (at least one per dim)");
  for (int64_t r : reps)
    if (r < 1) return e.error("fx-unsupported", "repeat count " + std::to_string(r) + " (an empty result) is not supported");
  size_t lead = reps.size() - size_t(x.rank());
  std::vector<int64_t> padAxes;
  for (size_t i = 0; i < lead; ++i) padAxes.push_back(int64_t(i));
  TRef xp = e.unsqueeze(x, padAxes);
  std::vector<int64_t> axes;
  ir::Shape wide, merged;
  for (size_t i = 0; i < reps.size(); ++i) {
    const ir::Dim& n = xp.type.shape[i];
    if (reps[i] != 1) {
      axes.push_back(int64_t(wide.size()));
      wide.push_back(ir::Dim(reps[i]));
    }
    wide.push_back(n);
    merged.push_back(ir::Dim(reps[i]) * n);
  }
  if (axes.empty()) return e.outValue(0, xp);
  TRef u = e.unsqueeze(xp, axes);
  return e.out(0, OpKind::Reshape, {e.expand(u, wide)}, {{"shape", merged}});
}

Status mapIndexSelect(Emitter& e) {
  SP_ASSIGN(TRef x, e.tensor(0, "self"));
  SP_ASSIGN(int64_t d, e.integer(1, "dim"));
  SP_ASSIGN(d, normDim(e, d, x.rank()));
  SP_ASSIGN(TRef idx, e.tensor(2, "index"));
  if (auto it = e.repeatIndices.find(idx.name); it != e.repeatIndices.end() &&
                                                x.type.shape[size_t(d)] == ir::Dim(it->second.n))
    return repeatView(e, x, d, it->second.times);
  return e.out(0, OpKind::Gather, {x, idx}, {{"axis", d}});
}

// repeat_interleave.self_int(x, repeats, dim): the repeat view (a tensor of
// repeats or no dim: not supported). repeat_interleave.Tensor(repeats), the
// index form torch 1.13's decomposition makes: where every repeat is one
// constant r (an empty buffer filled, viewed, expanded), the index
// [0]*r + [1]*r + ... as arange / r, remembered for index_select.
Status mapRepeatInterleave(Emitter& e) {
  if (overloadName(e.op) == "self_int") {
    SP_ASSIGN(TRef x, e.tensor(0, "self"));
    SP_ASSIGN(int64_t times, e.integer(1, "repeats"));
    SP_ASSIGN(std::optional<int64_t> dim, e.optInteger(2, "dim"));
    if (!dim) return e.error("fx-unsupported", "repeat_interleave without a dim (the flattened form) is not supported");
    SP_ASSIGN(int64_t d, normDim(e, *dim, x.rank()));
    if (times < 1) return e.error("fx-arg", "repeat_interleave repeats must be positive");
    return repeatView(e, x, d, times);
  }
  SP_ASSIGN(TRef reps, e.tensor(0, "repeats"));
  SP_ASSIGN(ir::TensorType t, e.outType(0));
  std::optional<double> r = e.uniformValue(reps);
  if (reps.rank() != 1 || !reps.type.shape[0].isConcrete() || !r || *r < 1 || *r != double(int64_t(*r)) ||
      t.shape.size() != 1 || !t.shape[0].isConcrete())
    return e.error("fx-unsupported",
                   "repeat_interleave of a repeats tensor that is not one constant repeat count is not supported");
  int64_t n = reps.type.shape[0].value(), times = int64_t(*r);
  if (t.shape[0].value() != n * times)
    return e.error("fx-arg", "repeat_interleave: declared " + std::to_string(t.shape[0].value()) + " elements, not " +
                                 std::to_string(n) + " x " + std::to_string(times));
  TRef ramp = e.emit(OpKind::Range, {}, {{"start", 0.0}, {"limit", double(n * times)}, {"delta", 1.0}, {"dtype", t.dtype}}, t);
  SP_TRY(e.out(0, OpKind::Div, {ramp, e.expand(e.constant(t.dtype, double(times)), t.shape)}));
  e.repeatIndices[e.outNames[0]] = {times, n};
  return okStatus();
}

Status mapEmbedding(Emitter& e) {
  SP_ASSIGN(TRef w, e.tensor(0, "weight"));
  SP_ASSIGN(TRef idx, e.tensor(1, "indices"));
  return e.out(0, OpKind::Gather, {w, idx}, {{"axis", int64_t(0)}});
}

// clone, detach, _to_copy, lift_fresh_copy, wait_tensor...: the value, cast
// to the declared dtype. A `self.<attr>` operand takes the declared type.
Status mapIdentity(Emitter& e) {
  SP_ASSIGN(TensorType t, e.outType(0));
  const Expr* a = e.arg(0, "self");
  if (!a) a = e.arg(0, "input");
  if (a && a->kind == Expr::Kind::Name && !e.env.count(a->s) && e.attrs.count(a->s))
    SP_TRY(e.resolveAttr(a->s, t));
  if (!a) return e.error("fx-arg", "missing tensor argument 0");
  SP_ASSIGN(TRef x, e.tensorOf(*a));
  if (x.dtype() != t.dtype) return e.out(0, OpKind::Cast, {x}, {{"to", t.dtype}});
  return e.outValue(0, x);
}

// copy(dst, src): src cast to dst's dtype and broadcast to its shape.
Status mapCopy(Emitter& e) {
  SP_ASSIGN(TRef dst, e.tensor(0, "self"));
  SP_ASSIGN(TRef src, e.tensor(1, "src"));
  TRef s = e.cast(src, dst.dtype());
  if (s.type.shape != dst.type.shape) return e.out(0, OpKind::Expand, {s}, {{"shape", dst.type.shape}});
  return e.outValue(0, s);
}

}  // namespace sp::frontend::fx

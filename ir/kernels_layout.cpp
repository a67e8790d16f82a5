// Layout kernels (pure data movement, dtype-agnostic: elements are copied by
// size) and the strided iteration helpers shared by all kernels.
#include <algorithm>
#include <cstring>
#include <thread>

#include "ir/kernel_util.h"

namespace sp::ir {

namespace {
thread_local KernelContext* tCurrentContext = nullptr;

void splitOverThreads(int64_t begin, int64_t end, const std::function<void(int64_t, int64_t)>& body,
                      int64_t minPerThread) {
  int64_t n = end - begin;
  int64_t hw = std::max<int64_t>(1, std::thread::hardware_concurrency());
  int64_t nt = std::min<int64_t>({hw, 8, n / std::max<int64_t>(1, minPerThread)});
  if (nt <= 1) {
    if (n > 0) body(begin, end);
    return;
  }
  std::vector<std::thread> threads;
  int64_t chunk = (n + nt - 1) / nt;
  for (int64_t t = 1; t < nt; ++t) {
    int64_t b = begin + t * chunk, e = std::min(end, b + chunk);
    if (b < e) threads.emplace_back(body, b, e);
  }
  body(begin, std::min(end, begin + chunk));
  for (auto& th : threads) th.join();
}
}  // namespace

KernelContext* currentKernelContext() { return tCurrentContext; }

KernelContextScope::KernelContextScope(KernelContext* ctx) : prev_(tCurrentContext) { tCurrentContext = ctx; }
KernelContextScope::~KernelContextScope() { tCurrentContext = prev_; }

bool kernelInterrupted() {
  KernelContext* c = tCurrentContext;
  if (!c || c->deadline == std::chrono::steady_clock::time_point::max()) return false;
  if (!c->interrupted && std::chrono::steady_clock::now() >= c->deadline) c->interrupted = true;
  return c->interrupted;
}

Tensor donatedOutput(std::span<const Tensor> in, std::initializer_list<size_t> candidates, DType dtype,
                     const std::vector<int64_t>& dims) {
  if (const KernelContext* c = tCurrentContext)
    for (size_t i : candidates)
      if (i < in.size() && i < 64 && (c->donated >> i & 1) && in[i].storageRefs() == 1 &&
          in[i].dtype() == dtype && in[i].dims() == dims)
        return in[i];
  return Tensor(dtype, dims);
}

void parallelFor(int64_t n, const std::function<void(int64_t, int64_t)>& body, int64_t minPerThread) {
  int64_t per = std::max<int64_t>(1, minPerThread);
  if (!tCurrentContext) return splitOverThreads(0, n, body, per);
  int64_t hw = std::max<int64_t>(1, std::min<unsigned>(8, std::thread::hardware_concurrency()));
  int64_t round = per * 512 * hw;
  for (int64_t b = 0; b < n; b += round) {
    if (b > 0 && kernelInterrupted()) return;
    splitOverThreads(b, std::min(n, b + round), body, per);
  }
}

StridedPlan stridedPlan(const std::vector<int64_t>& outDims, std::vector<std::vector<int64_t>> strides) {
  StridedPlan p;
  size_t nops = strides.size();
  p.strides.assign(nops, {});
  for (int64_t d : outDims) p.numel *= d;
  // Walk from the innermost dim, skipping size-1 dims and merging contiguous ones.
  std::vector<int64_t> rdims;
  std::vector<std::vector<int64_t>> rstr(nops);
  for (size_t i = outDims.size(); i-- > 0;) {
    int64_t d = outDims[i];
    if (d == 1 && p.numel != 0) continue;
    bool merge = !rdims.empty();
    for (size_t k = 0; merge && k < nops; ++k)
      if (strides[k][i] != rstr[k].back() * rdims.back()) merge = false;
    if (merge) {
      rdims.back() *= d;
    } else {
      rdims.push_back(d);
      for (size_t k = 0; k < nops; ++k) rstr[k].push_back(strides[k][i]);
    }
  }
  if (rdims.empty()) {
    rdims.push_back(1);
    for (size_t k = 0; k < nops; ++k) rstr[k].push_back(0);
  }
  p.dims.assign(rdims.rbegin(), rdims.rend());
  for (size_t k = 0; k < nops; ++k) p.strides[k].assign(rstr[k].rbegin(), rstr[k].rend());
  return p;
}

StridedPlan broadcastPlan(const std::vector<int64_t>& outDims,
                          const std::vector<std::vector<int64_t>>& inDims) {
  size_t r = outDims.size();
  std::vector<std::vector<int64_t>> strides;
  for (const auto& in : inDims) {
    SP_ASSERT(in.size() <= r, "broadcast operand has a higher rank than the output");
    std::vector<int64_t> s(r, 0);
    auto cs = stridesOf(in);
    size_t lead = r - in.size();
    for (size_t i = 0; i < in.size(); ++i) {
      SP_ASSERT(in[i] == outDims[lead + i] || in[i] == 1, "operand is not broadcastable");
      s[lead + i] = in[i] == outDims[lead + i] ? cs[i] : 0;
    }
    strides.push_back(std::move(s));
  }
  return stridedPlan(outDims, std::move(strides));
}

template <typename E>
static void copyRuns(const E* src, E* dst, const StridedPlan& p, int64_t base) {
  parallelFor(p.numel, [&](int64_t b, int64_t e) {
    forEachRun<1>(p, b, e, [&](int64_t pos, const std::array<int64_t, 1>& off, int64_t len) {
      int64_t s = p.strides[0].back();
      const E* in = src + base + off[0];
      if (s == 1) std::memcpy(dst + pos, in, size_t(len) * sizeof(E));
      else for (int64_t i = 0; i < len; ++i) dst[pos + i] = in[i * s];
    });
  });
}

Tensor gatherStrided(const Tensor& src, const std::vector<int64_t>& outDims, const StridedPlan& p,
                     int64_t baseOffset) {
  Tensor out(src.dtype(), outDims);
  if (out.numel() == 0) return out;
  switch (dtypeSize(src.dtype())) {
    case 1: copyRuns(src.data<uint8_t>(), out.mutableData<uint8_t>(), p, baseOffset); break;
    case 2: copyRuns(src.data<uint16_t>(), out.mutableData<uint16_t>(), p, baseOffset); break;
    case 4: copyRuns(src.data<uint32_t>(), out.mutableData<uint32_t>(), p, baseOffset); break;
    case 8: copyRuns(src.data<uint64_t>(), out.mutableData<uint64_t>(), p, baseOffset); break;
    default: SP_ASSERT(false, "unsupported element size");
  }
  return out;
}

Tensor broadcastTo(const Tensor& src, const std::vector<int64_t>& dims) {
  if (src.dims() == dims) return src;
  return gatherStrided(src, dims, broadcastPlan(dims, {src.dims()}));
}

// ---- kernels ----

Status kernelReshape(OpKind op, const AttrMap& attrs, std::span<const Tensor> in, std::vector<Tensor>& out) {
  SP_ASSIGN(Types t, inferTensors(op, attrs, in));
  out.push_back(in[0].reshaped(concreteDims(t[0].shape)));
  return okStatus();
}

Status kernelTranspose(OpKind op, const AttrMap& attrs, std::span<const Tensor> in, std::vector<Tensor>& out) {
  SP_ASSIGN(Types t, inferTensors(op, attrs, in));
  const Tensor& x = in[0];
  std::vector<int64_t> perm = attrInts(attrs, "perm");
  if (perm.empty())
    for (int64_t i = x.rank() - 1; i >= 0; --i) perm.push_back(i);
  auto cs = stridesOf(x.dims());
  std::vector<int64_t> s;
  for (int64_t p : perm) s.push_back(cs[size_t(p)]);
  auto dims = concreteDims(t[0].shape);
  out.push_back(gatherStrided(x, dims, stridedPlan(dims, {s})));
  return okStatus();
}

Status kernelSlice(OpKind op, const AttrMap& attrs, std::span<const Tensor> in, std::vector<Tensor>& out) {
  SP_ASSIGN(Types t, inferTensors(op, attrs, in));
  const Tensor& x = in[0];
  const auto& starts = attrInts(attrs, "starts");
  const auto& ends = attrInts(attrs, "ends");
  std::vector<int64_t> axes = attrInts(attrs, "axes");
  std::vector<int64_t> steps = attrInts(attrs, "steps");
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(int64_t(i));
  if (steps.empty()) steps.assign(starts.size(), 1);
  SP_ASSIGN(auto nax, normAxes(axes, x.rank()));
  auto s = stridesOf(x.dims());
  int64_t base = 0;
  for (size_t i = 0; i < nax.size(); ++i) {
    size_t a = size_t(nax[i]);
    auto [first, len] = sliceRange(starts[i], ends[i], steps[i], x.dims()[a]);
    if (len > 0) base += first * s[a];
    s[a] *= steps[i];
  }
  auto dims = concreteDims(t[0].shape);
  out.push_back(gatherStrided(x, dims, stridedPlan(dims, {s}), base));
  return okStatus();
}

Status kernelConcat(OpKind op, const AttrMap& attrs, std::span<const Tensor> in, std::vector<Tensor>& out) {
  SP_ASSIGN(Types t, inferTensors(op, attrs, in));
  auto dims = concreteDims(t[0].shape);
  size_t axis = size_t(*normAxis(attrInt(attrs, "axis"), int64_t(dims.size()), "concat"));
  Tensor y(in[0].dtype(), dims);
  size_t es = dtypeSize(y.dtype());
  int64_t outer = prodDims(dims, 0, axis);
  int64_t outRow = prodDims(dims, axis, dims.size()) * int64_t(es);
  int64_t at = 0;
  for (const Tensor& x : in) {
    int64_t row = prodDims(x.dims(), axis, x.dims().size()) * int64_t(es);
    for (int64_t o = 0; o < outer && row > 0; ++o)
      std::memcpy(y.mutableRaw() + o * outRow + at, x.raw() + o * row, size_t(row));
    at += row;
  }
  out.push_back(std::move(y));
  return okStatus();
}

Status kernelSplit(OpKind op, const AttrMap& attrs, std::span<const Tensor> in, std::vector<Tensor>& out) {
  SP_ASSIGN(Types t, inferTensors(op, attrs, in));
  const Tensor& x = in[0];
  size_t axis = size_t(*normAxis(attrInt(attrs, "axis"), x.rank(), "split"));
  size_t es = dtypeSize(x.dtype());
  int64_t outer = prodDims(x.dims(), 0, axis);
  int64_t inRow = prodDims(x.dims(), axis, x.dims().size()) * int64_t(es);
  int64_t at = 0;
  for (const TensorType& tt : t) {
    Tensor y(x.dtype(), concreteDims(tt.shape));
    int64_t row = prodDims(y.dims(), axis, y.dims().size()) * int64_t(es);
    for (int64_t o = 0; o < outer && row > 0; ++o)
      std::memcpy(y.mutableRaw() + o * row, x.raw() + o * inRow + at, size_t(row));
    at += row;
    out.push_back(std::move(y));
  }
  return okStatus();
}

Status kernelExpand(OpKind op, const AttrMap& attrs, std::span<const Tensor> in, std::vector<Tensor>& out) {
  SP_ASSIGN(Types t, inferTensors(op, attrs, in));
  out.push_back(broadcastTo(in[0], concreteDims(t[0].shape)));
  return okStatus();
}

// Reads integer index i of an index tensor as int64.
static int64_t indexAt(const Tensor& idx, int64_t i) {
  switch (idx.dtype()) {
    case DType::I64: return idx.data<int64_t>()[i];
    case DType::I32: return idx.data<int32_t>()[i];
    case DType::I16: return idx.data<int16_t>()[i];
    case DType::I8: return idx.data<int8_t>()[i];
    case DType::U8: return idx.data<uint8_t>()[i];
    default: SP_ASSERT(false, "index tensor must be integer"); return 0;
  }
}

static Result<int64_t> wrapIndex(int64_t v, int64_t d) {
  int64_t w = v < 0 ? v + d : v;
  if (w < 0 || w >= d)
    return makeError("index-out-of-range", "index " + istr(v) + " is out of range for dim " + istr(d));
  return w;
}

Status kernelGather(OpKind op, const AttrMap& attrs, std::span<const Tensor> in, std::vector<Tensor>& out) {
  SP_ASSIGN(Types t, inferTensors(op, attrs, in));
  const Tensor& x = in[0];
  const Tensor& idx = in[1];
  size_t axis = size_t(*normAxis(attrInt(attrs, "axis"), x.rank(), "gather"));
  Tensor y(x.dtype(), concreteDims(t[0].shape));
  size_t es = dtypeSize(x.dtype());
  int64_t outer = prodDims(x.dims(), 0, axis), d = x.dims()[axis];
  int64_t inner = prodDims(x.dims(), axis + 1, x.dims().size()) * int64_t(es);
  int64_t n = idx.numel();
  WorkPoll poll;
  for (int64_t j = 0; j < n; ++j) {
    if (poll.step(std::max<int64_t>(outer * inner / int64_t(es), 1))) break;
    SP_ASSIGN(int64_t w, wrapIndex(indexAt(idx, j), d));
    for (int64_t o = 0; o < outer && inner > 0; ++o)
      std::memcpy(y.mutableRaw() + (o * n + j) * inner, x.raw() + (o * d + w) * inner, size_t(inner));
  }
  out.push_back(std::move(y));
  return okStatus();
}

// For each element of `idx` (row-major), calls f(position in idx, flat offset
// in data with the axis coordinate replaced by the wrapped index).
template <typename F>
static Status forEachElementIndex(const Tensor& data, const Tensor& idx, size_t axis, F&& f) {
  auto ds = stridesOf(data.dims());
  const auto& id = idx.dims();
  std::vector<int64_t> coord(id.size(), 0);
  WorkPoll poll;
  for (int64_t p = 0; p < idx.numel(); ++p) {
    if (poll.step()) break;
    int64_t off = 0;
    for (size_t k = 0; k < id.size(); ++k)
      if (k != axis) off += coord[k] * ds[k];
    SP_ASSIGN(int64_t w, wrapIndex(indexAt(idx, p), data.dims()[axis]));
    f(p, off + w * ds[axis]);
    for (size_t k = id.size(); k-- > 0;) {
      if (++coord[k] < id[k]) break;
      coord[k] = 0;
    }
  }
  return okStatus();
}

Status kernelGatherElements(OpKind op, const AttrMap& attrs, std::span<const Tensor> in,
                            std::vector<Tensor>& out) {
  SP_ASSIGN(Types t, inferTensors(op, attrs, in));
  const Tensor& x = in[0];
  size_t axis = size_t(*normAxis(attrInt(attrs, "axis"), x.rank(), "gather_elements"));
  Tensor y(x.dtype(), concreteDims(t[0].shape));
  size_t es = dtypeSize(x.dtype());
  SP_TRY(forEachElementIndex(x, in[1], axis, [&](int64_t p, int64_t off) {
    std::memcpy(y.mutableRaw() + p * int64_t(es), x.raw() + off * int64_t(es), es);
  }));
  out.push_back(std::move(y));
  return okStatus();
}

}  // namespace sp::ir

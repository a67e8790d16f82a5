// Index, source, selection, encoding, loss and randomness kernels.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <type_traits>

#include "ir/kernel_util.h"

namespace sp::ir {

namespace {

int64_t indexValue(const Tensor& idx, int64_t i) {
  int64_t v = 0;
  visitDType(idx.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_integral_v<T>) v = int64_t(idx.data<T>()[i]);
    return 0;
  });
  return v;
}

Result<int64_t> wrapIdx(int64_t v, int64_t d) {
  int64_t w = v < 0 ? v + d : v;
  if (w < 0 || w >= d)
    return makeError("index-out-of-range", "index " + istr(v) + " is out of range for dim " + istr(d));
  return w;
}

}  // namespace

Status kernelScatterElements(OpKind op, const AttrMap& attrs, std::span<const Tensor> in,
                             std::vector<Tensor>& out) {
  SP_TRY(inferTensors(op, attrs, in));
  DType orig = in[0].dtype();
  Tensor x = widenHalf(in[0]), upd = widenHalf(in[2]);
  const Tensor& idx = in[1];
  size_t axis = size_t(*normAxis(attrInt(attrs, "axis"), x.rank(), "scatter_elements"));
  const std::string& red = attrStr(attrs, "reduction");
  Tensor y(x.dtype(), x.dims());
  if (x.numel()) std::memcpy(y.mutableRaw(), x.raw(), x.nbytes());
  auto ds = stridesOf(x.dims());
  const auto& id = idx.dims();
  SP_TRY(visitDType(x.dtype(), [&](auto tag) -> Status {
    using T = decltype(tag);
    T* py = y.mutableData<T>();
    const T* pu = upd.data<T>();
    std::vector<int64_t> coord(id.size(), 0);
    WorkPoll poll;
    for (int64_t p = 0; p < idx.numel(); ++p) {
      if (poll.step()) break;
      SP_ASSIGN(int64_t w, wrapIdx(indexValue(idx, p), x.dims()[axis]));
      int64_t off = w * ds[axis];
      for (size_t k = 0; k < id.size(); ++k)
        if (k != axis) off += coord[k] * ds[k];
      T& d = py[off];
      T u = pu[p];
      if (red == "none") d = u;
      else if (red == "add") d = T(d + u);
      else if (red == "mul") d = T(d * u);
      else if (red == "max") d = std::max(d, u);
      else d = std::min(d, u);
      for (size_t k = id.size(); k-- > 0;) {
        if (++coord[k] < id[k]) break;
        coord[k] = 0;
      }
    }
    return okStatus();
  }));
  out.push_back(y.dtype() == orig ? y : y.castTo(orig));
  return okStatus();
}

Status kernelTrilu(OpKind op, const AttrMap& attrs, std::span<const Tensor> in, std::vector<Tensor>& out) {
  SP_TRY(inferTensors(op, attrs, in));
  const Tensor& x = in[0];
  bool upper = attrInt(attrs, "upper") != 0;
  int64_t k = attrInt(attrs, "k");
  int64_t r = x.dims()[size_t(x.rank() - 2)], c = x.dims().back();
  Tensor y(x.dtype(), x.dims());  // zero-filled
  size_t es = dtypeSize(x.dtype());
  int64_t mats = r * c == 0 ? 0 : x.numel() / (r * c);
  WorkPoll poll;
  for (int64_t m = 0; m < mats; ++m)
    for (int64_t i = 0; i < r; ++i) {
      if (poll.step(c)) break;
      for (int64_t j = 0; j < c; ++j) {
        bool keep = upper ? j - i >= k : j - i <= k;
        if (keep) {
          int64_t e = (m * r + i) * c + j;
          std::memcpy(y.mutableRaw() + e * int64_t(es), x.raw() + e * int64_t(es), es);
        }
      }
    }
  out.push_back(std::move(y));
  return okStatus();
}

Status kernelConstant(OpKind op, const AttrMap& attrs, std::span<const Tensor> in, std::vector<Tensor>& out) {
  SP_TRY(inferTensors(op, attrs, in));
  out.push_back(attrTensor(attrs, "value"));
  return okStatus();
}

Status kernelRange(OpKind op, const AttrMap& attrs, std::span<const Tensor> in, std::vector<Tensor>& out) {
  SP_ASSIGN(Types t, inferTensors(op, attrs, in));
  DType dt = t[0].dtype;
  double start = attrFloat(attrs, "start"), delta = attrFloat(attrs, "delta");
  Tensor y(dt, concreteDims(t[0].shape));
  if (isInteger(dt) && start == std::trunc(start) && delta == std::trunc(delta) &&
      std::fabs(start) < 9.0e15 && std::fabs(delta) < 9.0e15) {
    // Exact integer arithmetic.
    int64_t s = int64_t(start), d = int64_t(delta);
    Tensor w(DType::I64, y.dims());
    WorkPoll poll;
    for (int64_t i = 0; i < y.numel(); ++i) {
      if (poll.step()) break;
      w.mutableData<int64_t>()[i] = s + i * d;
    }
    y = dt == DType::I64 ? w : w.castTo(dt);
  } else {
    WorkPoll poll;
    for (int64_t i = 0; i < y.numel(); ++i) {
      if (poll.step()) break;
      y.setFromDouble(i, start + double(i) * delta);
    }
  }
  out.push_back(std::move(y));
  return okStatus();
}

Status kernelTopK(OpKind op, const AttrMap& attrs, std::span<const Tensor> in, std::vector<Tensor>& out) {
  SP_ASSIGN(Types t, inferTensors(op, attrs, in));
  Tensor x = widenHalf(in[0]);
  size_t axis = size_t(*normAxis(attrInt(attrs, "axis"), x.rank(), "topk"));
  int64_t k = attrInt(attrs, "k");
  bool largest = attrInt(attrs, "largest") != 0;
  int64_t outer = prodDims(x.dims(), 0, axis), d = x.dims()[axis];
  int64_t inner = prodDims(x.dims(), axis + 1, x.dims().size());
  auto ydims = concreteDims(t[0].shape);
  Tensor vals(x.dtype(), ydims), idxs(DType::I64, ydims);
  visitDType(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* px = x.data<T>();
    T* pv = vals.mutableData<T>();
    int64_t* pi = idxs.mutableData<int64_t>();
    std::vector<int64_t> order(static_cast<size_t>(d));
    // Strict total order: by value (NaN ranks above everything), then index.
    auto before = [&](const T* row, int64_t a, int64_t b) {
      T va = row[a * inner], vb = row[b * inner];
      bool na = false, nb = false;
      if constexpr (std::is_floating_point_v<T>) { na = std::isnan(va); nb = std::isnan(vb); }
      if (na != nb) return largest ? na : nb;
      if (!na && va != vb) return largest ? va > vb : va < vb;
      return a < b;
    };
    WorkPoll poll;
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        if (poll.step(d)) return 0;
        const T* row = px + o * d * inner + i;
        std::iota(order.begin(), order.end(), int64_t(0));
        std::partial_sort(order.begin(), order.begin() + k, order.end(),
                          [&](int64_t a, int64_t b) { return before(row, a, b); });
        for (int64_t j = 0; j < k; ++j) {
          int64_t e = (o * k + j) * inner + i;
          pv[e] = row[order[size_t(j)] * inner];
          pi[e] = order[size_t(j)];
        }
      }
    return 0;
  });
  out.push_back(vals.dtype() == t[0].dtype ? vals : vals.castTo(t[0].dtype));
  out.push_back(std::move(idxs));
  return okStatus();
}

Status kernelOneHot(OpKind op, const AttrMap& attrs, std::span<const Tensor> in, std::vector<Tensor>& out) {
  SP_ASSIGN(Types t, inferTensors(op, attrs, in));
  const Tensor& idx = in[0];
  int64_t depth = attrInt(attrs, "depth");
  size_t axis = size_t(*normAxis(attrInt(attrs, "axis"), idx.rank() + 1, "one_hot"));
  int64_t outer = prodDims(idx.dims(), 0, axis);
  int64_t inner = prodDims(idx.dims(), axis, idx.dims().size());
  Tensor y(t[0].dtype, concreteDims(t[0].shape));
  double on = attrFloat(attrs, "on"), off = attrFloat(attrs, "off");
  WorkPoll poll;
  if (off != 0)
    for (int64_t i = 0; i < y.numel(); ++i) {
      if (poll.step()) break;
      y.setFromDouble(i, off);
    }
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      if (poll.step()) break;
      int64_t v = indexValue(idx, o * inner + i);
      if (v < 0) v += depth;
      if (v < 0 || v >= depth) continue;  // ONNX: out-of-range rows are all off
      y.setFromDouble((o * depth + v) * inner + i, on);
    }
  out.push_back(std::move(y));
  return okStatus();
}

Status kernelCrossEntropy(OpKind op, const AttrMap& attrs, std::span<const Tensor> in,
                          std::vector<Tensor>& out) {
  SP_ASSIGN(Types t, inferTensors(op, attrs, in));
  Tensor x = widenHalf(in[0]);
  const Tensor& target = in[1];
  std::optional<Tensor> w;
  if (in.size() == 3) w = widenHalf(in[2]);
  int64_t n = x.dims()[0], c = x.dims()[1];
  int64_t inner = prodDims(x.dims(), 2, x.dims().size());
  int64_t ignore = attrInt(attrs, "ignore_index");
  const std::string& red = attrStr(attrs, "reduction");
  std::vector<double> loss(size_t(n * inner), 0.0);
  double lossSum = 0, weightSum = 0;
  SP_TRY(visitDType(x.dtype(), [&](auto tag) -> Status {
    using T = decltype(tag);
    if constexpr (std::is_floating_point_v<T>) {
      const T* px = x.data<T>();
      const T* pw = w ? w->data<T>() : nullptr;
      for (int64_t b = 0; b < n; ++b)
        for (int64_t i = 0; i < inner; ++i) {
          int64_t e = b * inner + i;
          if (e % 256 == 255 && kernelInterrupted()) return okStatus();  // output discarded
          int64_t cls = indexValue(target, e);
          if (cls == ignore) continue;
          if (cls < 0 || cls >= c)
            return makeError("index-out-of-range", "cross_entropy: target " + istr(cls) +
                                                       " is out of range for " + istr(c) + " classes");
          const T* row = px + b * c * inner + i;
          double m = -INFINITY;
          for (int64_t j = 0; j < c; ++j) m = std::max(m, double(row[j * inner]));
          double s = 0;
          for (int64_t j = 0; j < c; ++j) s += std::exp(double(row[j * inner]) - m);
          double wt = pw ? double(pw[cls]) : 1.0;
          double l = -(double(row[cls * inner]) - m - std::log(s)) * wt;
          loss[size_t(e)] = l;
          lossSum += l;
          weightSum += wt;
        }
    }
    return okStatus();
  }));
  DType dt = t[0].dtype;
  if (red == "none") {
    Tensor y(dt, concreteDims(t[0].shape));
    for (int64_t i = 0; i < y.numel(); ++i) y.setFromDouble(i, loss[size_t(i)]);
    out.push_back(std::move(y));
  } else {
    out.push_back(Tensor::scalar(dt, red == "sum" ? lossSum : lossSum / weightSum));
  }
  return okStatus();
}

namespace {

// y[i] = stream[i] >= thr ? x[i] / keep : 0 and the mask, position by
// position (y may share x's or the stream's storage).
template <typename T, typename S>
void dropoutLoop(const Tensor& x, const Tensor& s, double thr, double ratio, Tensor& y, Tensor& mask) {
  const T* px = x.data<T>();
  const S* ps = s.data<S>();
  T* py = y.mutableData<T>();
  uint8_t* pm = mask.mutableData<uint8_t>();
  T keep = T(1.0 - ratio);
  parallelFor(x.numel(), [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      bool m = double(ps[i]) >= thr;
      pm[i] = m;
      py[i] = m ? px[i] / keep : T(0);
    }
  });
}

}  // namespace

Status kernelDropout(OpKind op, const AttrMap& attrs, std::span<const Tensor> in, std::vector<Tensor>& out) {
  SP_TRY(inferTensors(op, attrs, in));
  Tensor y = isHalf(in[0].dtype()) ? Tensor() : donatedOutput(in, {0, 1}, in[0].dtype(), in[0].dims());
  Tensor x = widenHalf(in[0]), s = widenHalf(in[1]);
  if (!y.defined()) y = x.dtype() == in[0].dtype() ? Tensor(x.dtype(), x.dims()) : x;  // a half's own f32 copy
  double ratio = attrFloat(attrs, "ratio");
  // The comparison happens in the stream's precision (f32 for f32/f16/bf16).
  double thr = s.dtype() == DType::F64 ? ratio : double(float(ratio));
  Tensor mask(DType::Bool, x.dims());
  auto run = [&](auto xt) {
    using T = decltype(xt);
    if (s.dtype() == DType::F64) dropoutLoop<T, double>(x, s, thr, ratio, y, mask);
    else dropoutLoop<T, float>(x, s, thr, ratio, y, mask);
  };
  if (x.dtype() == DType::F64) run(double{});
  else run(float{});
  out.push_back(y.dtype() == in[0].dtype() ? y : y.castTo(in[0].dtype()));
  out.push_back(std::move(mask));
  return okStatus();
}

}  // namespace sp::ir

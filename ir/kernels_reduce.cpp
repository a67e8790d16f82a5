// Reductions, arg reductions, softmax and normalizations.
// Accumulation: float sums, products, means and variances accumulate in f64
// in input row-major order (deterministic, and within ~1e-7 relative of an
// exact sum, which keeps PyTorch comparisons at 1e-5); elementwise parts of
// softmax/norms compute in the tensor's type (f32 for f16/bf16). Integer
// sums and products are exact, wrapping in 64 bits.
#include <cmath>
#include <limits>
#include <type_traits>

#include "ir/kernel_util.h"

namespace sp::ir {

namespace {

// The output of a row-wise kernel over in[0] that computes in its own type:
// a donated in[0], or an undefined tensor meaning "in place into x" when
// in[0] is a half (x = widenHalf(in[0]) is then the kernel's own copy), or
// a new tensor.
Tensor inPlaceOutput(std::span<const Tensor> in) {
  if (isHalf(in[0].dtype())) return Tensor();
  return donatedOutput(in, {0}, in[0].dtype(), in[0].dims());
}

template <typename T>
Status reduceTyped(OpKind op, const Tensor& x, const std::vector<int64_t>& keepDims, Tensor& y) {
  constexpr bool kFloat = std::is_floating_point_v<T>;
  using Acc = std::conditional_t<kFloat, double, uint64_t>;  // uint64: wrapping int64
  int64_t nOut = prodDims(keepDims, 0, keepDims.size());
  int64_t count = nOut == 0 ? 0 : x.numel() / nOut;
  auto os = stridesOf(keepDims);
  for (size_t i = 0; i < keepDims.size(); ++i)
    if (keepDims[i] != x.dims()[i]) os[i] = 0;
  StridedPlan p = stridedPlan(x.dims(), {os});
  const T* px = x.data<T>();
  T* py = y.mutableData<T>();
  // Slices along the leading kept dims reduce into disjoint outputs: they
  // run in parallel, each output still accumulating in row-major order.
  size_t lead = 0;
  while (lead < keepDims.size() && keepDims[lead] == x.dims()[lead]) ++lead;
  int64_t slices = prodDims(x.dims(), 0, lead);
  int64_t perSlice = slices == 0 ? 0 : x.numel() / slices;
  auto visit = [&](auto f) {
    parallelFor(slices, [&](int64_t b, int64_t e) {
      forEachRun<1>(p, b * perSlice, e * perSlice, [&](int64_t pos, const std::array<int64_t, 1>& off, int64_t len) {
        int64_t s = p.strides[0].back();
        for (int64_t i = 0; i < len; ++i) f(off[0] + i * s, px[pos + i]);
      });
    }, std::max<int64_t>(1, (int64_t(1) << 15) / std::max<int64_t>(1, perSlice)));
  };
  if (op == OpKind::ReduceMax || op == OpKind::ReduceMin) {
    bool isMax = op == OpKind::ReduceMax;
    T init;
    if constexpr (kFloat) init = isMax ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::infinity();
    else init = isMax ? std::numeric_limits<T>::lowest() : std::numeric_limits<T>::max();
    std::vector<T> acc(size_t(nOut), init);
    visit([&](int64_t o, T v) {
      T& a = acc[size_t(o)];
      if constexpr (kFloat) {
        if (std::isnan(v) || (isMax ? v > a : v < a)) a = v;
      } else {
        if (isMax ? v > a : v < a) a = v;
      }
    });
    for (int64_t i = 0; i < nOut; ++i) py[i] = acc[size_t(i)];
    return okStatus();
  }
  bool prod = op == OpKind::ReduceProd;
  std::vector<Acc> acc(size_t(nOut), prod ? Acc(1) : Acc(0));
  if (prod) visit([&](int64_t o, T v) { acc[size_t(o)] = Acc(acc[size_t(o)] * Acc(v)); });
  else visit([&](int64_t o, T v) { acc[size_t(o)] = Acc(acc[size_t(o)] + Acc(v)); });
  for (int64_t i = 0; i < nOut; ++i) {
    Acc a = acc[size_t(i)];
    if (op == OpKind::ReduceMean) {
      if constexpr (kFloat) {
        py[i] = T(a / double(count));
      } else {
        if (count == 0) return makeError("empty-reduction", "reduce_mean over an empty integer tensor");
        py[i] = T(int64_t(a) / count);
      }
    } else {
      py[i] = T(a);
    }
  }
  return okStatus();
}

}  // namespace

Status kernelReduce(OpKind op, const AttrMap& attrs, std::span<const Tensor> in, std::vector<Tensor>& out) {
  SP_ASSIGN(Types t, inferTensors(op, attrs, in));
  Tensor x = widenHalf(in[0]);
  std::vector<int64_t> keep = x.dims();
  const auto& axes = attrInts(attrs, "axes");
  SP_ASSIGN(auto nax, normAxes(axes, x.rank()));
  if (axes.empty()) keep.assign(keep.size(), 1);
  for (int64_t a : nax) keep[size_t(a)] = 1;
  Tensor y(x.dtype(), keep);
  SP_TRY(visitDType(x.dtype(), [&](auto tag) { return reduceTyped<decltype(tag)>(op, x, keep, y); }));
  y = y.reshaped(concreteDims(t[0].shape));
  out.push_back(y.dtype() == t[0].dtype ? y : y.castTo(t[0].dtype));
  return okStatus();
}

Status kernelArg(OpKind op, const AttrMap& attrs, std::span<const Tensor> in, std::vector<Tensor>& out) {
  SP_ASSIGN(Types t, inferTensors(op, attrs, in));
  Tensor x = widenHalf(in[0]);
  size_t axis = size_t(*normAxis(attrInt(attrs, "axis"), x.rank(), "arg"));
  bool last = attrInt(attrs, "select_last_index") != 0, isMax = op == OpKind::ArgMax;
  int64_t outer = prodDims(x.dims(), 0, axis), d = x.dims()[axis];
  int64_t inner = prodDims(x.dims(), axis + 1, x.dims().size());
  Tensor y(DType::I64, concreteDims(t[0].shape));
  int64_t* py = y.mutableData<int64_t>();
  visitDType(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    const T* px = x.data<T>();
    WorkPoll poll;
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t i = 0; i < inner; ++i) {
        if (poll.step(d)) return 0;
        const T* row = px + o * d * inner + i;
        int64_t best = 0;
        for (int64_t j = 1; j < d; ++j) {
          T v = row[j * inner], b = row[best * inner];
          bool better = isMax ? (last ? v >= b : v > b) : (last ? v <= b : v < b);
          if (better) best = j;
        }
        py[o * inner + i] = best;
      }
    return 0;
  });
  out.push_back(std::move(y));
  return okStatus();
}

Status kernelSoftmax(OpKind op, const AttrMap& attrs, std::span<const Tensor> in, std::vector<Tensor>& out) {
  SP_TRY(inferTensors(op, attrs, in));
  // In place (into a donated input or a half's own f32 copy): each element
  // is read before its output is written, and only then.
  Tensor y = inPlaceOutput(in);
  Tensor x = widenHalf(in[0]);
  if (!y.defined()) y = x;
  size_t axis = size_t(*normAxis(attrInt(attrs, "axis"), x.rank(), "softmax"));
  int64_t outer = prodDims(x.dims(), 0, axis), d = x.dims()[axis];
  int64_t inner = prodDims(x.dims(), axis + 1, x.dims().size());
  bool logMode = op == OpKind::LogSoftmax;
  visitDType(x.dtype(), [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_floating_point_v<T>) {
      const T* px = x.data<T>();
      T* py = y.mutableData<T>();
      parallelFor(outer * inner, [&](int64_t b, int64_t e) {
        for (int64_t r = b; r < e; ++r) {
          int64_t base = (r / inner) * d * inner + r % inner;
          T m = -std::numeric_limits<T>::infinity();
          for (int64_t j = 0; j < d; ++j) m = std::max(m, px[base + j * inner]);
          if (std::isinf(m) && m < 0) m = 0;  // all -inf: avoid inf - inf
          double sum = 0;
          for (int64_t j = 0; j < d; ++j) {
            T ev = std::exp(px[base + j * inner] - m);
            if (!logMode) py[base + j * inner] = ev;
            sum += double(ev);
          }
          if (logMode) {
            T ls = T(std::log(sum));
            for (int64_t j = 0; j < d; ++j) py[base + j * inner] = px[base + j * inner] - m - ls;
          } else {
            T inv = T(1.0 / sum);
            for (int64_t j = 0; j < d; ++j) py[base + j * inner] *= inv;
          }
        }
      }, std::max<int64_t>(1, (int64_t(1) << 15) / std::max<int64_t>(1, d)));
    }
    return 0;
  });
  out.push_back(y.dtype() == in[0].dtype() ? y : y.castTo(in[0].dtype()));
  return okStatus();
}

namespace {

// Shared body of layer_norm and rms_norm: rows of n normalized elements.
template <typename T>
void normRows(bool rms, const Tensor& x, int64_t n, double eps, const Tensor* scale,
              const Tensor* bias, Tensor& y) {
  const T* px = x.data<T>();
  const T* ps = scale ? scale->data<T>() : nullptr;
  const T* pb = bias ? bias->data<T>() : nullptr;
  T* py = y.mutableData<T>();
  int64_t rows = n == 0 ? 0 : x.numel() / n;
  parallelFor(rows, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      const T* row = px + r * n;
      T* o = py + r * n;
      double mean = 0;
      if (!rms) {
        for (int64_t j = 0; j < n; ++j) mean += double(row[j]);
        mean /= double(n);
      }
      double var = 0;
      for (int64_t j = 0; j < n; ++j) {
        double dv = double(row[j]) - mean;
        var += dv * dv;
      }
      var /= double(n);
      T inv = T(1.0 / std::sqrt(var + eps)), mu = T(mean);
      for (int64_t j = 0; j < n; ++j) {
        T v = (row[j] - mu) * inv;
        if (ps) v *= ps[j];
        if (pb) v += pb[j];
        o[j] = v;
      }
    }
  }, std::max<int64_t>(1, (int64_t(1) << 15) / std::max<int64_t>(1, n)));
}

Status normKernel(bool rms, OpKind op, const AttrMap& attrs, std::span<const Tensor> in,
                  std::vector<Tensor>& out) {
  SP_TRY(inferTensors(op, attrs, in));
  // In place as softmax: a row is read completely before it is written.
  Tensor y = inPlaceOutput(in);
  Tensor x = widenHalf(in[0]);
  size_t axis = size_t(*normAxis(attrInt(attrs, "axis"), x.rank(), "norm"));
  std::vector<int64_t> nd(x.dims().begin() + int64_t(axis), x.dims().end());
  int64_t n = prodDims(nd, 0, nd.size());
  std::optional<Tensor> scale, bias;
  if (in.size() > 1) scale = broadcastTo(widenHalf(in[1]), nd);
  if (in.size() > 2) bias = broadcastTo(widenHalf(in[2]), nd);
  if (!y.defined()) y = x;
  double eps = attrFloat(attrs, "epsilon");
  if (x.dtype() == DType::F64)
    normRows<double>(rms, x, n, eps, scale ? &*scale : nullptr, bias ? &*bias : nullptr, y);
  else
    normRows<float>(rms, x, n, eps, scale ? &*scale : nullptr, bias ? &*bias : nullptr, y);
  out.push_back(y.dtype() == in[0].dtype() ? y : y.castTo(in[0].dtype()));
  return okStatus();
}

}  // namespace

Status kernelLayerNorm(OpKind op, const AttrMap& attrs, std::span<const Tensor> in, std::vector<Tensor>& out) {
  return normKernel(false, op, attrs, in, out);
}

Status kernelRmsNorm(OpKind op, const AttrMap& attrs, std::span<const Tensor> in, std::vector<Tensor>& out) {
  return normKernel(true, op, attrs, in, out);
}

}  // namespace sp::ir

// Elementwise kernels: unary, cast, binary (with numpy broadcasting),
// comparisons and where. f16/bf16 compute in f32 and round on store; f32 in
// f32; f64 in f64; integers exactly in their own type (wrapping on overflow).
#include <atomic>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "ir/kernel_util.h"

namespace sp::ir {

namespace {

template <typename T>
using Unsigned = std::make_unsigned_t<T>;

template <typename T, typename F>
void mapUnary(const Tensor& x, Tensor& y, F f) {
  const T* a = x.data<T>();
  T* o = y.mutableData<T>();
  parallelFor(x.numel(), [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) o[i] = f(a[i]);
  });
}

// Integer bound from a float attribute: saturates, rounds inward.
template <typename T>
T intBound(double v, bool lower) {
  if (std::isnan(v)) return lower ? std::numeric_limits<T>::lowest() : std::numeric_limits<T>::max();
  double r = lower ? std::ceil(v) : std::floor(v);
  if (r <= double(std::numeric_limits<T>::lowest())) return std::numeric_limits<T>::lowest();
  if (r >= double(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
  return T(r);
}

template <typename T>
Status unaryTyped(OpKind op, const AttrMap& attrs, const Tensor& x, Tensor& y) {
  if constexpr (std::is_floating_point_v<T>) {
    constexpr T kHalf = T(0.5), kOne = T(1);
    switch (op) {
      case OpKind::Exp: mapUnary<T>(x, y, [](T v) { return std::exp(v); }); return okStatus();
      case OpKind::Log: mapUnary<T>(x, y, [](T v) { return std::log(v); }); return okStatus();
      case OpKind::Sqrt: mapUnary<T>(x, y, [](T v) { return std::sqrt(v); }); return okStatus();
      case OpKind::Rsqrt: mapUnary<T>(x, y, [=](T v) { return kOne / std::sqrt(v); }); return okStatus();
      case OpKind::Reciprocal: mapUnary<T>(x, y, [=](T v) { return kOne / v; }); return okStatus();
      case OpKind::Tanh: mapUnary<T>(x, y, [](T v) { return std::tanh(v); }); return okStatus();
      case OpKind::Sigmoid:
        mapUnary<T>(x, y, [=](T v) {
          if (v >= 0) return kOne / (kOne + std::exp(-v));
          T e = std::exp(v);
          return e / (kOne + e);
        });
        return okStatus();
      case OpKind::Silu:
        mapUnary<T>(x, y, [=](T v) { return v / (kOne + std::exp(-v)); });
        return okStatus();
      case OpKind::Gelu:
        if (attrStr(attrs, "approximate") == "tanh") {
          const T c = T(0.7978845608028654), k = T(0.044715);
          mapUnary<T>(x, y, [=](T v) { return kHalf * v * (kOne + std::tanh(c * (v + k * v * v * v))); });
        } else {
          const T r = T(0.7071067811865476);
          mapUnary<T>(x, y, [=](T v) { return kHalf * v * (kOne + std::erf(v * r)); });
        }
        return okStatus();
      case OpKind::Erf: mapUnary<T>(x, y, [](T v) { return std::erf(v); }); return okStatus();
      case OpKind::Sin: mapUnary<T>(x, y, [](T v) { return std::sin(v); }); return okStatus();
      case OpKind::Cos: mapUnary<T>(x, y, [](T v) { return std::cos(v); }); return okStatus();
      case OpKind::Floor: mapUnary<T>(x, y, [](T v) { return std::floor(v); }); return okStatus();
      case OpKind::Ceil: mapUnary<T>(x, y, [](T v) { return std::ceil(v); }); return okStatus();
      case OpKind::Neg: mapUnary<T>(x, y, [](T v) { return -v; }); return okStatus();
      case OpKind::Abs: mapUnary<T>(x, y, [](T v) { return std::fabs(v); }); return okStatus();
      case OpKind::Relu: mapUnary<T>(x, y, [](T v) { return v < 0 ? T(0) : v; }); return okStatus();
      case OpKind::Sign:
        mapUnary<T>(x, y, [](T v) { return v > 0 ? T(1) : v < 0 ? T(-1) : v; });
        return okStatus();
      case OpKind::Clip: {
        T lo = T(attrFloat(attrs, "min")), hi = T(attrFloat(attrs, "max"));
        mapUnary<T>(x, y, [=](T v) { return std::isnan(v) ? v : std::min(std::max(v, lo), hi); });
        return okStatus();
      }
      default: break;
    }
  } else {
    switch (op) {
      case OpKind::Not: mapUnary<T>(x, y, [](T v) { return T(v ? 0 : 1); }); return okStatus();
      case OpKind::Neg: mapUnary<T>(x, y, [](T v) { return T(Unsigned<T>(0) - Unsigned<T>(v)); }); return okStatus();
      case OpKind::Abs:
        mapUnary<T>(x, y, [](T v) { return v < 0 ? T(Unsigned<T>(0) - Unsigned<T>(v)) : v; });
        return okStatus();
      case OpKind::Relu: mapUnary<T>(x, y, [](T v) { return v < 0 ? T(0) : v; }); return okStatus();
      case OpKind::Sign: mapUnary<T>(x, y, [](T v) { return T(v > 0 ? 1 : v < 0 ? -1 : 0); }); return okStatus();
      case OpKind::Clip: {
        T lo = intBound<T>(attrFloat(attrs, "min"), true), hi = intBound<T>(attrFloat(attrs, "max"), false);
        mapUnary<T>(x, y, [=](T v) { return std::min(std::max(v, lo), hi); });
        return okStatus();
      }
      default: break;
    }
  }
  return makeError("dtype-mismatch", std::string(opName(op)) + ": unsupported dtype " +
                                         std::string(dtypeName(x.dtype())));
}

}  // namespace

Status kernelUnary(OpKind op, const AttrMap& attrs, std::span<const Tensor> in, std::vector<Tensor>& out) {
  SP_TRY(inferTensors(op, attrs, in));
  if (op == OpKind::Identity) {
    out.push_back(in[0]);
    return okStatus();
  }
  // In place: into a donated input, or into the kernel's own f32 copy of a
  // half input.
  bool half = isHalf(in[0].dtype());
  Tensor y = half ? Tensor() : donatedOutput(in, {0}, in[0].dtype(), in[0].dims());
  Tensor x = widenHalf(in[0]);
  if (half) y = x;
  SP_TRY(visitDType(x.dtype(), [&](auto tag) { return unaryTyped<decltype(tag)>(op, attrs, x, y); }));
  out.push_back(y.dtype() == in[0].dtype() ? y : y.castTo(in[0].dtype()));
  return okStatus();
}

namespace {

template <typename D, typename S>
D convertElem(S v) {
  if constexpr (std::is_floating_point_v<S> && !std::is_floating_point_v<D>) {
    if (std::isnan(v)) return D(0);
    double t = std::trunc(double(v));
    if (t <= double(std::numeric_limits<D>::lowest())) return std::numeric_limits<D>::lowest();
    if (t >= double(std::numeric_limits<D>::max())) return std::numeric_limits<D>::max();
    return D(t);
  } else {
    return D(v);
  }
}

}  // namespace

Status kernelCast(OpKind op, const AttrMap& attrs, std::span<const Tensor> in, std::vector<Tensor>& out) {
  SP_TRY(inferTensors(op, attrs, in));
  DType to = attrType(attrs, "to");
  if (to == in[0].dtype()) {
    out.push_back(in[0]);
    return okStatus();
  }
  Tensor x = widenHalf(in[0]);
  DType mid = computeType(to);
  Tensor y(mid, x.dims());
  visitDType(x.dtype(), [&](auto stag) {
    using S = decltype(stag);
    const S* a = x.data<S>();
    if (to == DType::Bool) {
      uint8_t* o = y.mutableData<uint8_t>();
      parallelFor(x.numel(), [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) o[i] = a[i] != S(0);
      });
      return 0;
    }
    visitDType(mid, [&](auto dtag) {
      using D = decltype(dtag);
      D* o = y.mutableData<D>();
      parallelFor(x.numel(), [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) o[i] = convertElem<D>(a[i]);
      });
      return 0;
    });
    return 0;
  });
  out.push_back(mid == to ? y : y.castTo(to));
  return okStatus();
}

namespace {

// Runs o[pos] = f(a[...], b[...]) over the broadcast of a and b.
template <typename TA, typename TB, typename TO, typename F>
void binaryLoop(const Tensor& a, const Tensor& b, Tensor& y, F f) {
  StridedPlan p = broadcastPlan(y.dims(), {a.dims(), b.dims()});
  const TA* pa = a.data<TA>();
  const TB* pb = b.data<TB>();
  TO* o = y.mutableData<TO>();
  parallelFor(p.numel, [&](int64_t beg, int64_t end) {
    forEachRun<2>(p, beg, end, [&](int64_t pos, const std::array<int64_t, 2>& off, int64_t len) {
      const TA* xa = pa + off[0];
      const TB* xb = pb + off[1];
      TO* out = o + pos;
      int64_t sa = p.strides[0].back(), sb = p.strides[1].back();
      if (sa == 1 && sb == 1) for (int64_t i = 0; i < len; ++i) out[i] = f(xa[i], xb[i]);
      else if (sa == 1 && sb == 0) for (int64_t i = 0; i < len; ++i) out[i] = f(xa[i], xb[0]);
      else if (sa == 0 && sb == 1) for (int64_t i = 0; i < len; ++i) out[i] = f(xa[0], xb[i]);
      else for (int64_t i = 0; i < len; ++i) out[i] = f(xa[i * sa], xb[i * sb]);
    });
  });
}

template <typename T>
T intPow(T base, T exp) {
  if (exp < 0) {
    if (base == 1) return 1;
    if constexpr (std::is_signed_v<T>)
      if (base == -1) return (exp % 2 == 0) ? T(1) : T(-1);
    return 0;  // |base| > 1: truncates to 0; 0^negative is undefined, give 0
  }
  using U = Unsigned<T>;
  U r = 1, bb = U(base);
  for (auto e = exp; e > 0; e >>= 1) {
    if (e & 1) r = U(r * bb);
    bb = U(bb * bb);
  }
  return T(r);
}

template <typename T>
Status binaryTyped(OpKind op, const AttrMap& attrs, const Tensor& a, const Tensor& b, Tensor& y) {
  constexpr bool kFloat = std::is_floating_point_v<T>;
  using U = Unsigned<std::conditional_t<kFloat, int, T>>;
  std::atomic<bool> divZero{false};
  auto run = [&](auto f) { binaryLoop<T, T, T>(a, b, y, f); };
  auto cmp = [&](auto f) { binaryLoop<T, T, uint8_t>(a, b, y, f); };
  switch (op) {
    case OpKind::Add:
      if constexpr (kFloat) run([](T x, T z) { return x + z; });
      else run([](T x, T z) { return T(U(x) + U(z)); });
      break;
    case OpKind::Sub:
      if constexpr (kFloat) run([](T x, T z) { return x - z; });
      else run([](T x, T z) { return T(U(x) - U(z)); });
      break;
    case OpKind::Mul:
      if constexpr (kFloat) run([](T x, T z) { return x * z; });
      else run([](T x, T z) { return T(U(x) * U(z)); });
      break;
    case OpKind::Div:
      if constexpr (kFloat) run([](T x, T z) { return x / z; });
      else run([&](T x, T z) {
        if (z == 0) { divZero = true; return T(0); }
        if constexpr (std::is_signed_v<T>)
          if (z == -1) return T(U(0) - U(x));  // avoids min / -1 overflow
        return T(x / z);
      });
      break;
    case OpKind::Pow:
      if constexpr (kFloat) run([](T x, T z) { return T(std::pow(x, z)); });
      else run([](T x, T z) { return intPow(x, z); });
      break;
    case OpKind::Max:
      if constexpr (kFloat) run([](T x, T z) { return std::isnan(x) || std::isnan(z) ? x + z : std::max(x, z); });
      else run([](T x, T z) { return std::max(x, z); });
      break;
    case OpKind::Min:
      if constexpr (kFloat) run([](T x, T z) { return std::isnan(x) || std::isnan(z) ? x + z : std::min(x, z); });
      else run([](T x, T z) { return std::min(x, z); });
      break;
    case OpKind::Mod:
      if constexpr (kFloat) {
        run([](T x, T z) { return T(std::fmod(x, z)); });
      } else {
        bool cMod = attrInt(attrs, "fmod") == 1;
        run([&](T x, T z) {
          if (z == 0) { divZero = true; return T(0); }
          if constexpr (std::is_signed_v<T>) {
            if (z == -1) return T(0);
            T r = T(x % z);
            if (!cMod && r != 0 && ((r < 0) != (z < 0))) r = T(r + z);
            return r;
          } else {
            return T(x % z);
          }
        });
      }
      break;
    case OpKind::Eq: cmp([](T x, T z) { return uint8_t(x == z); }); break;
    case OpKind::Ne: cmp([](T x, T z) { return uint8_t(x != z); }); break;
    case OpKind::Lt: cmp([](T x, T z) { return uint8_t(x < z); }); break;
    case OpKind::Le: cmp([](T x, T z) { return uint8_t(x <= z); }); break;
    case OpKind::Gt: cmp([](T x, T z) { return uint8_t(x > z); }); break;
    case OpKind::Ge: cmp([](T x, T z) { return uint8_t(x >= z); }); break;
    case OpKind::And: cmp([](T x, T z) { return uint8_t(x && z); }); break;
    case OpKind::Or: cmp([](T x, T z) { return uint8_t(x || z); }); break;
    case OpKind::Xor: cmp([](T x, T z) { return uint8_t(bool(x) != bool(z)); }); break;
    default: SP_ASSERT(false, "not a binary op");
  }
  if (divZero)
    return makeError("division-by-zero", std::string(opName(op)) + ": integer division by zero");
  return okStatus();
}

}  // namespace

Status kernelBinary(OpKind op, const AttrMap& attrs, std::span<const Tensor> in, std::vector<Tensor>& out) {
  SP_ASSIGN(Types t, inferTensors(op, attrs, in));
  DType resultType = t[0].dtype;
  auto dims = concreteDims(t[0].shape);
  // Computed in the inputs' own type: the output may take a donated input's
  // storage (taken before a and b copy the inputs).
  bool ownType = !isHalf(in[0].dtype()) && !isHalf(in[1].dtype()) && in[0].dtype() == in[1].dtype();
  Tensor y = ownType ? donatedOutput(in, {0, 1}, resultType, dims) : Tensor();
  Tensor a = widenHalf(in[0]);
  Tensor b = widenHalf(in[1]);
  if (op == OpKind::Pow && a.dtype() != b.dtype()) {
    if (isFloat(a.dtype())) {
      b = b.castTo(a.dtype());
    } else {  // integer base, other exponent type: compute in f64, truncate
      a = a.castTo(DType::F64);
      b = b.castTo(DType::F64);
    }
  }
  DType yt = t[0].dtype == DType::Bool ? DType::Bool : a.dtype();
  if (!y.defined()) y = Tensor(yt, dims);
  SP_TRY(visitDType(a.dtype(), [&](auto tag) { return binaryTyped<decltype(tag)>(op, attrs, a, b, y); }));
  out.push_back(y.dtype() == resultType ? y : y.castTo(resultType));
  return okStatus();
}

namespace {

template <typename E>
void whereLoop(const Tensor& c, const Tensor& a, const Tensor& b, Tensor& y) {
  StridedPlan p = broadcastPlan(y.dims(), {c.dims(), a.dims(), b.dims()});
  const uint8_t* pc = c.data<uint8_t>();
  const E* pa = a.data<E>();
  const E* pb = b.data<E>();
  E* o = y.mutableData<E>();
  parallelFor(p.numel, [&](int64_t beg, int64_t end) {
    forEachRun<3>(p, beg, end, [&](int64_t pos, const std::array<int64_t, 3>& off, int64_t len) {
      int64_t sc = p.strides[0].back(), sa = p.strides[1].back(), sb = p.strides[2].back();
      for (int64_t i = 0; i < len; ++i)
        o[pos + i] = pc[off[0] + i * sc] ? pa[off[1] + i * sa] : pb[off[2] + i * sb];
    });
  });
}

}  // namespace

Status kernelWhere(OpKind op, const AttrMap& attrs, std::span<const Tensor> in, std::vector<Tensor>& out) {
  SP_ASSIGN(Types t, inferTensors(op, attrs, in));
  Tensor y = donatedOutput(in, {1, 2, 0}, t[0].dtype, concreteDims(t[0].shape));
  switch (dtypeSize(y.dtype())) {
    case 1: whereLoop<uint8_t>(in[0], in[1], in[2], y); break;
    case 2: whereLoop<uint16_t>(in[0], in[1], in[2], y); break;
    case 4: whereLoop<uint32_t>(in[0], in[1], in[2], y); break;
    case 8: whereLoop<uint64_t>(in[0], in[1], in[2], y); break;
    default: SP_ASSERT(false, "unsupported element size");
  }
  out.push_back(std::move(y));
  return okStatus();
}

}  // namespace sp::ir

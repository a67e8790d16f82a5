// Device kernels of the CUDA backend (device_ops.h).
#include "cuda_ref/device_ops.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>
#include <cstdint>
#include <type_traits>

namespace sp::cuda_ref::dev {

namespace {

constexpr int kThreads = 256;

int64_t blocksFor(int64_t n) {
  int64_t b = (n + kThreads - 1) / kThreads;
  return b < 1 ? 1 : (b > 65535 * 32 ? 65535 * 32 : b);
}

// ---- element loads and stores, all through f32 (f64 and ints through double) ----
template <typename T>
struct Acc { using type = float; };
template <>
struct Acc<double> { using type = double; };
template <>
struct Acc<int64_t> { using type = double; };
template <>
struct Acc<int32_t> { using type = double; };
template <>
struct Acc<uint8_t> { using type = float; };

template <typename T>
__device__ __forceinline__ typename Acc<T>::type ld(const T* p, int64_t i) {
  if constexpr (std::is_same_v<T, __half>) return __half2float(p[i]);
  else if constexpr (std::is_same_v<T, __nv_bfloat16>) return __bfloat162float(p[i]);
  else return typename Acc<T>::type(p[i]);
}
template <typename T, typename V>
__device__ __forceinline__ void st(T* p, int64_t i, V v) {
  if constexpr (std::is_same_v<T, __half>) p[i] = __float2half_rn(float(v));
  else if constexpr (std::is_same_v<T, __nv_bfloat16>) p[i] = __float2bfloat16_rn(float(v));
  else p[i] = T(v);
}

// Calls f(T{}) for the element type of e.
template <typename F>
cudaError_t withElt(Elt e, F f) {
  switch (e) {
    case Elt::F32: return f(float{});
    case Elt::F16: return f(__half{});
    case Elt::BF16: return f(__nv_bfloat16{});
    case Elt::F64: return f(double{});
    case Elt::I64: return f(int64_t{});
    case Elt::I32: return f(int32_t{});
    case Elt::U8: return f(uint8_t{});
  }
  return cudaErrorInvalidValue;
}
template <typename F>
cudaError_t withFloat(Elt e, F f) {
  switch (e) {
    case Elt::F32: return f(float{});
    case Elt::F16: return f(__half{});
    case Elt::BF16: return f(__nv_bfloat16{});
    default: return cudaErrorNotSupported;
  }
}
template <typename F>
cudaError_t withBytes(size_t bytes, F f) {
  switch (bytes) {
    case 1: return f(uint8_t{});
    case 2: return f(uint16_t{});
    case 4: return f(uint32_t{});
    case 8: return f(uint64_t{});
  }
  return cudaErrorInvalidValue;
}

// The strided-index helper: operand offsets of linear index i.
template <int N>
__device__ __forceinline__ void offsets(const Strides<N>& s, int64_t i, int64_t (&off)[N]) {
  for (int o = 0; o < N; ++o) off[o] = s.base[o];
  for (int k = s.rank - 1; k >= 0; --k) {
    int64_t d = s.dims[k], q = i / d, r = i - q * d;
    for (int o = 0; o < N; ++o) off[o] += r * s.stride[o][k];
    i = q;
  }
}

#define SP_GRID_LOOP(i, n) \
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < (n); i += int64_t(gridDim.x) * blockDim.x)

cudaError_t launched() { return cudaGetLastError(); }

// ---- strided copy ----
template <typename T>
__global__ void copyKernel(Strides<2> s, int64_t n, const T* src, T* dst) {
  SP_GRID_LOOP(i, n) {
    int64_t off[2];
    offsets(s, i, off);
    dst[off[0]] = src[off[1]];
  }
}

// ---- the functor table ----
__device__ __forceinline__ float applyEw(EwOp op, float x, float z, float a0, float a1) {
  switch (op) {
    case EwOp::Neg: return -x;
    case EwOp::Abs: return fabsf(x);
    case EwOp::Exp: return expf(x);
    case EwOp::Log: return logf(x);
    case EwOp::Sqrt: return sqrtf(x);
    case EwOp::Rsqrt: return 1.0f / sqrtf(x);
    case EwOp::Reciprocal: return 1.0f / x;
    case EwOp::Tanh: return tanhf(x);
    case EwOp::Sigmoid: {
      if (x >= 0) return 1.0f / (1.0f + expf(-x));
      float e = expf(x);
      return e / (1.0f + e);
    }
    case EwOp::Relu: return x < 0 ? 0.0f : x;
    case EwOp::Gelu: return 0.5f * x * (1.0f + erff(x * 0.7071067811865476f));
    case EwOp::GeluTanh: return 0.5f * x * (1.0f + tanhf(0.7978845608028654f * (x + 0.044715f * x * x * x)));
    case EwOp::Silu: return x / (1.0f + expf(-x));
    case EwOp::Erf: return erff(x);
    case EwOp::Sin: return sinf(x);
    case EwOp::Cos: return cosf(x);
    case EwOp::Floor: return floorf(x);
    case EwOp::Ceil: return ceilf(x);
    case EwOp::Sign: return x > 0 ? 1.0f : x < 0 ? -1.0f : x;
    case EwOp::Clip: return isnan(x) ? x : fminf(fmaxf(x, a0), a1);
    case EwOp::Add: return x + z;
    case EwOp::Sub: return x - z;
    case EwOp::Mul: return x * z;
    case EwOp::Div: return x / z;
    case EwOp::Pow: return powf(x, z);
    case EwOp::Max: return isnan(x) || isnan(z) ? x + z : fmaxf(x, z);
    case EwOp::Min: return isnan(x) || isnan(z) ? x + z : fminf(x, z);
    case EwOp::Eq: return x == z;
    case EwOp::Ne: return x != z;
    case EwOp::Lt: return x < z;
    case EwOp::Le: return x <= z;
    case EwOp::Gt: return x > z;
    case EwOp::Ge: return x >= z;
    case EwOp::And: return x != 0 && z != 0;
    case EwOp::Or: return x != 0 || z != 0;
    case EwOp::Xor: return (x != 0) != (z != 0);
  }
  return 0;
}

template <typename T, typename O>
__global__ void ewKernel(EwOp op, Strides<3> s, int64_t n, const T* a, const T* b, O* y, float a0, float a1) {
  SP_GRID_LOOP(i, n) {
    int64_t off[3];
    offsets(s, i, off);
    float x = ld(a, off[1]);
    float z = b ? ld(b, off[2]) : 0.0f;
    st(y, off[0], applyEw(op, x, z, a0, a1));
  }
}

template <typename T>
__global__ void whereKernel(Strides<4> s, int64_t n, const uint8_t* c, const T* a, const T* b, T* y) {
  SP_GRID_LOOP(i, n) {
    int64_t off[4];
    offsets(s, i, off);
    y[off[0]] = c[off[1]] ? a[off[2]] : b[off[3]];
  }
}

template <typename F, typename T>
__global__ void castKernel(int64_t n, const F* x, T* y) {
  SP_GRID_LOOP(i, n) st(y, i, ld(x, i));
}

// ---- block reductions ----
template <typename V, typename Op>
__device__ V blockReduce(V v, Op op, V* shared) {
  for (int d = 16; d > 0; d /= 2) v = op(v, __shfl_down_sync(0xffffffffu, v, d));
  int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0) shared[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < int(blockDim.x / 32) ? shared[lane] : shared[0];
    if (lane >= int(blockDim.x / 32)) v = shared[0];
    for (int d = 16; d > 0; d /= 2) {
      V o = __shfl_down_sync(0xffffffffu, v, d);
      if (lane + d < int(blockDim.x / 32)) v = op(v, o);
    }
    if (lane == 0) shared[0] = v;
  }
  __syncthreads();
  V r = shared[0];
  __syncthreads();
  return r;
}

struct SumOp {
  template <typename V>
  __device__ V operator()(V a, V b) const { return a + b; }
};
struct ProdOp {
  template <typename V>
  __device__ V operator()(V a, V b) const { return a * b; }
};
struct MaxOp {
  template <typename V>
  __device__ V operator()(V a, V b) const { return isnan(a) || isnan(b) ? a + b : (b > a ? b : a); }
};
struct MinOp {
  template <typename V>
  __device__ V operator()(V a, V b) const { return isnan(a) || isnan(b) ? a + b : (b < a ? b : a); }
};

template <typename T, typename Op>
__global__ void reduceKernel(Strides<2> kept, Strides<2> red, int64_t nRed, Op op, float init, bool mean, const T* x,
                             T* y) {
  __shared__ float shared[32];
  int64_t out[2];
  offsets(kept, int64_t(blockIdx.x), out);
  float acc = init;
  for (int64_t j = threadIdx.x; j < nRed; j += blockDim.x) {
    int64_t in[2];
    offsets(red, j, in);
    acc = op(acc, ld(x, out[1] + in[1]));
  }
  acc = blockReduce(acc, op, shared);
  if (threadIdx.x == 0) st(y, out[0], mean ? acc / float(nRed) : acc);
}

template <typename T>
__global__ void softmaxKernel(bool logOut, int64_t n, int64_t inner, const T* x, T* y) {
  __shared__ float shared[32];
  int64_t row = blockIdx.x, o = row / inner, in = row - o * inner;
  int64_t base = o * n * inner + in;
  float m = -INFINITY;
  for (int64_t j = threadIdx.x; j < n; j += blockDim.x) m = fmaxf(m, ld(x, base + j * inner));
  m = blockReduce(m, MaxOp{}, shared);
  float sum = 0;
  for (int64_t j = threadIdx.x; j < n; j += blockDim.x) sum += expf(ld(x, base + j * inner) - m);
  sum = blockReduce(sum, SumOp{}, shared);
  float ls = logf(sum);
  for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
    float v = ld(x, base + j * inner) - m;
    st(y, base + j * inner, logOut ? v - ls : expf(v) / sum);
  }
}

template <typename T>
__global__ void normKernel(bool rms, int64_t n, double eps, const T* x, const T* scale, int64_t scaleN,
                           const T* bias, int64_t biasN, T* y) {
  __shared__ double shared[32];
  const int64_t base = int64_t(blockIdx.x) * n;
  double mean = 0;
  if (!rms) {
    double s = 0;
    for (int64_t j = threadIdx.x; j < n; j += blockDim.x) s += double(ld(x, base + j));
    mean = blockReduce(s, SumOp{}, shared) / double(n);
  }
  double var = 0;
  for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
    double d = double(ld(x, base + j)) - mean;
    var += d * d;
  }
  var = blockReduce(var, SumOp{}, shared) / double(n);
  float inv = float(1.0 / sqrt(var + eps)), mu = float(mean);
  for (int64_t j = threadIdx.x; j < n; j += blockDim.x) {
    float v = (ld(x, base + j) - mu) * inv;
    if (scale) v *= ld(scale, j % scaleN);
    if (bias) v += ld(bias, j % biasN);
    st(y, base + j, v);
  }
}

template <typename T, typename I>
__global__ void gatherKernel(int64_t n, int64_t axisDim, int64_t inner, int64_t nIdx, const T* data, const I* idx,
                             T* out, int64_t* bad) {
  SP_GRID_LOOP(i, n) {
    int64_t r = i % inner, q = i / inner, k = q % nIdx, o = q / nIdx;
    int64_t v = int64_t(idx[k]);
    if (v < 0) v += axisDim;
    if (v < 0 || v >= axisDim) {
      atomicCAS(reinterpret_cast<unsigned long long*>(bad), 0ull, (unsigned long long)(k + 1));
      continue;
    }
    out[i] = data[(o * axisDim + v) * inner + r];
  }
}

// Member-order reduction, one element per thread.
template <typename T>
__global__ void membersKernel(RedOp op, bool isBool, int64_t g, int64_t n, const T* x, T* y) {
  SP_GRID_LOOP(i, n) {
    if constexpr (std::is_integral_v<T>) {
      if (isBool) {
        bool v = x[i] != 0;
        for (int64_t m = 1; m < g; ++m) v = op == RedOp::Min ? (v && x[m * n + i]) : (v || x[m * n + i]);
        y[i] = T(v);
        continue;
      }
      uint64_t acc = uint64_t(int64_t(x[i]));
      for (int64_t m = 1; m < g; ++m) {
        int64_t a = int64_t(acc), b = int64_t(x[m * n + i]);
        acc = op == RedOp::Max ? uint64_t(b > a ? b : a) : op == RedOp::Min ? uint64_t(b < a ? b : a) : acc + uint64_t(b);
      }
      y[i] = T(acc);
    } else {
      auto acc = ld(x, i);
      for (int64_t m = 1; m < g; ++m) {
        auto v = ld(x, m * n + i);
        acc = op == RedOp::Max ? MaxOp{}(acc, v) : op == RedOp::Min ? MinOp{}(acc, v) : acc + v;
      }
      if (op == RedOp::Mean) acc /= decltype(acc)(g);
      st(y, i, acc);
    }
  }
}

}  // namespace

bool ewIsBinary(EwOp op) { return op >= EwOp::Add; }
bool ewIsCompare(EwOp op) { return op >= EwOp::Eq; }

cudaError_t copyStrided(size_t elemBytes, const Strides<2>& s, const void* src, void* dst, cudaStream_t stream) {
  int64_t n = s.numel();
  if (n == 0) return cudaSuccess;
  return withBytes(elemBytes, [&](auto tag) {
    using T = decltype(tag);
    copyKernel<T><<<blocksFor(n), kThreads, 0, stream>>>(s, n, static_cast<const T*>(src), static_cast<T*>(dst));
    return launched();
  });
}

cudaError_t elementwise(EwOp op, Elt in, const Strides<3>& s, const void* a, const void* b, void* y, float a0, float a1,
                        cudaStream_t stream) {
  int64_t n = s.numel();
  if (n == 0) return cudaSuccess;
  return withFloat(in, [&](auto tag) {
    using T = decltype(tag);
    const T* pa = static_cast<const T*>(a);
    const T* pb = static_cast<const T*>(b);
    if (ewIsCompare(op))
      ewKernel<T, uint8_t><<<blocksFor(n), kThreads, 0, stream>>>(op, s, n, pa, pb, static_cast<uint8_t*>(y), a0, a1);
    else
      ewKernel<T, T><<<blocksFor(n), kThreads, 0, stream>>>(op, s, n, pa, pb, static_cast<T*>(y), a0, a1);
    return launched();
  });
}

cudaError_t where(size_t elemBytes, const Strides<4>& s, const void* cond, const void* a, const void* b, void* y,
                  cudaStream_t stream) {
  int64_t n = s.numel();
  if (n == 0) return cudaSuccess;
  return withBytes(elemBytes, [&](auto tag) {
    using T = decltype(tag);
    whereKernel<T><<<blocksFor(n), kThreads, 0, stream>>>(s, n, static_cast<const uint8_t*>(cond),
                                                          static_cast<const T*>(a), static_cast<const T*>(b),
                                                          static_cast<T*>(y));
    return launched();
  });
}

cudaError_t cast(Elt from, Elt to, int64_t n, const void* x, void* y, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  return withElt(from, [&](auto ftag) {
    using F = decltype(ftag);
    return withElt(to, [&](auto ttag) {
      using T = decltype(ttag);
      castKernel<F, T><<<blocksFor(n), kThreads, 0, stream>>>(n, static_cast<const F*>(x), static_cast<T*>(y));
      return launched();
    });
  });
}

cudaError_t reduce(RedOp op, Elt e, const Strides<2>& kept, const Strides<2>& red, const void* x, void* y,
                   cudaStream_t stream) {
  int64_t outN = kept.numel(), nRed = red.numel();
  if (outN == 0) return cudaSuccess;
  if (outN > INT32_MAX) return cudaErrorInvalidValue;
  return withFloat(e, [&](auto tag) {
    using T = decltype(tag);
    auto run = [&](auto f, float init) {
      reduceKernel<T><<<unsigned(outN), kThreads, 0, stream>>>(kept, red, nRed, f, init, op == RedOp::Mean,
                                                              static_cast<const T*>(x), static_cast<T*>(y));
      return launched();
    };
    switch (op) {
      case RedOp::Sum:
      case RedOp::Mean: return run(SumOp{}, 0.0f);
      case RedOp::Prod: return run(ProdOp{}, 1.0f);
      case RedOp::Max: return run(MaxOp{}, -INFINITY);
      case RedOp::Min: return run(MinOp{}, INFINITY);
    }
    return cudaErrorInvalidValue;
  });
}

cudaError_t softmax(bool log, Elt e, int64_t outer, int64_t n, int64_t inner, const void* x, void* y,
                    cudaStream_t stream) {
  int64_t rows = outer * inner;
  if (rows == 0 || n == 0) return cudaSuccess;
  if (rows > INT32_MAX) return cudaErrorInvalidValue;
  return withFloat(e, [&](auto tag) {
    using T = decltype(tag);
    softmaxKernel<T><<<unsigned(rows), kThreads, 0, stream>>>(log, n, inner, static_cast<const T*>(x),
                                                             static_cast<T*>(y));
    return launched();
  });
}

cudaError_t norm(bool rms, Elt e, int64_t rows, int64_t n, double eps, const void* x, const void* scale,
                 int64_t scaleN, const void* bias, int64_t biasN, void* y, cudaStream_t stream) {
  if (rows == 0 || n == 0) return cudaSuccess;
  if (rows > INT32_MAX) return cudaErrorInvalidValue;
  return withFloat(e, [&](auto tag) {
    using T = decltype(tag);
    normKernel<T><<<unsigned(rows), kThreads, 0, stream>>>(rms, n, eps, static_cast<const T*>(x),
                                                          static_cast<const T*>(scale), scaleN,
                                                          static_cast<const T*>(bias), biasN, static_cast<T*>(y));
    return launched();
  });
}

cudaError_t gather(size_t elemBytes, bool idx64, int64_t outer, int64_t axisDim, int64_t inner, int64_t nIdx,
                   const void* data, const void* idx, void* out, int64_t* bad, cudaStream_t stream) {
  int64_t n = outer * nIdx * inner;
  if (n == 0) return cudaSuccess;
  return withBytes(elemBytes, [&](auto tag) {
    using T = decltype(tag);
    auto run = [&](auto itag) {
      using I = decltype(itag);
      gatherKernel<T, I><<<blocksFor(n), kThreads, 0, stream>>>(n, axisDim, inner, nIdx, static_cast<const T*>(data),
                                                              static_cast<const I*>(idx), static_cast<T*>(out), bad);
      return launched();
    };
    return idx64 ? run(int64_t{}) : run(int32_t{});
  });
}

cudaError_t reduceMembers(RedOp op, Elt e, bool isBool, int64_t g, int64_t n, const void* stack, void* y,
                          cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  return withElt(e, [&](auto tag) {
    using T = decltype(tag);
    membersKernel<T><<<blocksFor(n), kThreads, 0, stream>>>(op, isBool, g, n, static_cast<const T*>(stack),
                                                           static_cast<T*>(y));
    return launched();
  });
}

}  // namespace sp::cuda_ref::dev

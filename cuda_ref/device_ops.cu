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
constexpr int kVec = 8;  // elements per thread on the vector path (below)

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

// The strided-index helper: operand offsets of linear index i. Idx is the
// type the index is split in: 32-bit division is several times cheaper than
// 64-bit, so launchers pass uint32_t when the element count fits (withIdx).
// The outermost dim needs no division.
template <int N, typename Idx>
__device__ __forceinline__ void offsets(const Strides<N>& s, Idx i, int64_t (&off)[N]) {
  for (int o = 0; o < N; ++o) off[o] = s.base[o];
  for (int k = s.rank - 1; k >= 0; --k) {
    Idx r = i;
    if (k > 0) {
      Idx d = Idx(s.dims[k]), q = i / d;
      r = i - q * d;
      i = q;
    }
    for (int o = 0; o < N; ++o) off[o] += int64_t(r) * s.stride[o][k];
  }
}

// Strides with size-1 dims dropped and adjacent dims merged where every
// operand walks them as one (stride[k] == stride[k+1] * dims[k+1]): a
// contiguous same-shape operation becomes rank 1, a broadcast over the
// leading dims rank 2, so kernels divide once or not at all.
template <int N>
Strides<N> collapse(const Strides<N>& in) {
  Strides<N> out;
  out.rank = 0;
  for (int o = 0; o < N; ++o) out.base[o] = in.base[o];
  for (int k = 0; k < in.rank; ++k) {
    if (in.dims[k] == 1) continue;
    bool merge = out.rank > 0;
    for (int o = 0; merge && o < N; ++o) merge = out.stride[o][out.rank - 1] == in.stride[o][k] * in.dims[k];
    if (merge) {
      out.dims[out.rank - 1] *= in.dims[k];
      for (int o = 0; o < N; ++o) out.stride[o][out.rank - 1] = in.stride[o][k];
      continue;
    }
    out.dims[out.rank] = in.dims[k];
    for (int o = 0; o < N; ++o) out.stride[o][out.rank] = in.stride[o][k];
    ++out.rank;
  }
  return out;
}

// Calls f(Idx{}) with the index type kernels split linear indices in:
// uint32_t when n elements fit, else uint64_t.
template <typename F>
void withIdx(int64_t n, F f) {
  if (n <= int64_t(UINT32_MAX)) f(uint32_t{});
  else f(uint64_t{});
}

// Whether collapsed strides `s` take the vector path: the innermost dim a
// multiple of kVec; every operand broadcast along it (stride 0) or
// contiguous (stride 1) with every outer stride and its base a multiple of
// kVec and its pointer aligned to a whole pack (operand 0, the output,
// contiguous). ptrs[o] null: an absent operand.
template <int N>
bool vectorizable(const Strides<N>& s, const void* const (&ptrs)[N], const size_t (&bytes)[N]) {
  if (s.rank == 0 || s.dims[s.rank - 1] % kVec != 0) return false;
  for (int o = 0; o < N; ++o) {
    if (!ptrs[o]) continue;
    const int64_t inner = s.stride[o][s.rank - 1];
    if (inner == 0 && o > 0) continue;
    if (inner != 1 || s.base[o] % kVec != 0) return false;
    if (reinterpret_cast<uintptr_t>(ptrs[o]) % (bytes[o] * kVec) != 0) return false;
    for (int k = 0; k + 1 < s.rank; ++k)
      if (s.stride[o][k] % kVec != 0) return false;
  }
  return true;
}

#define SP_GRID_LOOP(i, n) \
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < (n); i += int64_t(gridDim.x) * blockDim.x)

cudaError_t launched() { return cudaGetLastError(); }

// ---- strided copy ----
template <typename T, typename Idx>
__global__ void copyKernel(Strides<2> s, int64_t n, const T* src, T* dst) {
  SP_GRID_LOOP(i, n) {
    int64_t off[2];
    offsets(s, Idx(i), off);
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

template <typename T, typename O, typename Idx>
__global__ void ewKernel(EwOp op, Strides<3> s, int64_t n, const T* a, const T* b, O* y, float a0, float a1) {
  SP_GRID_LOOP(i, n) {
    int64_t off[3];
    offsets(s, Idx(i), off);
    float x = ld(a, off[1]);
    float z = b ? ld(b, off[2]) : 0.0f;
    st(y, off[0], applyEw(op, x, z, a0, a1));
  }
}

template <typename T, typename Idx>
__global__ void whereKernel(Strides<4> s, int64_t n, const uint8_t* c, const T* a, const T* b, T* y) {
  SP_GRID_LOOP(i, n) {
    int64_t off[4];
    offsets(s, Idx(i), off);
    y[off[0]] = c[off[1]] ? a[off[2]] : b[off[3]];
  }
}

// ---- the vector path: kVec consecutive elements per thread ----
// When the innermost collapsed dim is contiguous or broadcast (stride 1 or 0)
// for every operand, a thread takes kVec consecutive elements of it: one
// index split per kVec elements, and contiguous operands move in one
// 8-to-32-byte load or store (bf16: 16 bytes) instead of kVec 2-byte ones.
template <typename T>
struct alignas(sizeof(T) * kVec) Pack {
  T v[kVec];
};

template <typename T>
__device__ __forceinline__ Pack<T> loadPack(const T* p, int64_t off, bool contiguous) {
  if (contiguous) return *reinterpret_cast<const Pack<T>*>(p + off);
  Pack<T> r;
  const T x = p[off];
#pragma unroll
  for (int k = 0; k < kVec; ++k) r.v[k] = x;
  return r;
}

template <typename T, typename O, typename Idx>
__global__ void ewVecKernel(EwOp op, Strides<3> s, int64_t packs, const T* a, const T* b, O* y, float a0, float a1) {
  const int last = s.rank - 1;
  const bool aC = s.stride[1][last] == 1, bC = b && s.stride[2][last] == 1;
  SP_GRID_LOOP(v, packs) {
    int64_t off[3];
    offsets(s, Idx(v * kVec), off);
    Pack<T> pa = loadPack(a, off[1], aC);
    Pack<T> pb;
    if (b) pb = loadPack(b, off[2], bC);
    Pack<O> out;
#pragma unroll
    for (int k = 0; k < kVec; ++k) {
      float z = b ? ld(pb.v, k) : 0.0f;
      st(out.v, k, applyEw(op, ld(pa.v, k), z, a0, a1));
    }
    *reinterpret_cast<Pack<O>*>(y + off[0]) = out;
  }
}

template <typename T, typename Idx>
__global__ void whereVecKernel(Strides<4> s, int64_t packs, const uint8_t* c, const T* a, const T* b, T* y) {
  const int last = s.rank - 1;
  const bool cC = s.stride[1][last] == 1, aC = s.stride[2][last] == 1, bC = s.stride[3][last] == 1;
  SP_GRID_LOOP(v, packs) {
    int64_t off[4];
    offsets(s, Idx(v * kVec), off);
    Pack<uint8_t> pc = loadPack(c, off[1], cC);
    Pack<T> pa = loadPack(a, off[2], aC), pb = loadPack(b, off[3], bC), out;
#pragma unroll
    for (int k = 0; k < kVec; ++k) out.v[k] = pc.v[k] ? pa.v[k] : pb.v[k];
    *reinterpret_cast<Pack<T>*>(y + off[0]) = out;
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

// A softmax row's max and sum in one pass (online: a thread's sum is
// rescaled when its max grows), then the block's max with every thread's sum
// rescaled to it.
struct RowStats {
  float m = -INFINITY, s = 0, logS = 0;
  __device__ void add(float v) {
    if (v > m) {
      s = s * expf(m - v) + 1.0f;
      m = v;
    } else if (v != -INFINITY) {  // a masked element adds nothing (and -inf - -inf is NaN)
      s += expf(v - m);
    }
  }
  // Block-wide: m becomes the row max, s the row sum of exp(x - m).
  __device__ void reduce(float* shared) {
    float rowMax = blockReduce(m, MaxOp{}, shared);
    s = blockReduce(m == -INFINITY ? 0.0f : s * expf(m - rowMax), SumOp{}, shared);
    m = rowMax;
    logS = logf(s);
  }
  __device__ float out(float x, bool logOut) const { return logOut ? x - m - logS : expf(x - m) / s; }
};

template <typename T>
__global__ void softmaxKernel(bool logOut, int64_t n, int64_t inner, const T* x, T* y) {
  __shared__ float shared[32];
  int64_t row = blockIdx.x, o = row / inner, in = row - o * inner;
  int64_t base = o * n * inner + in;
  RowStats rs;
  for (int64_t j = threadIdx.x; j < n; j += blockDim.x) rs.add(ld(x, base + j * inner));
  rs.reduce(shared);
  for (int64_t j = threadIdx.x; j < n; j += blockDim.x) st(y, base + j * inner, rs.out(ld(x, base + j * inner), logOut));
}

// A contiguous row (inner == 1) whose length is a multiple of kVec, on
// pack-aligned storage: the same two passes with kVec-element loads and
// stores.
template <typename T>
__global__ void softmaxRowVecKernel(bool logOut, int64_t n, const T* x, T* y) {
  __shared__ float shared[32];
  const int64_t packs = n / kVec, base = int64_t(blockIdx.x) * n;
  RowStats rs;
  for (int64_t j = threadIdx.x; j < packs; j += blockDim.x) {
    Pack<T> p = loadPack(x, base + j * kVec, true);
#pragma unroll
    for (int k = 0; k < kVec; ++k) rs.add(ld(p.v, k));
  }
  rs.reduce(shared);
  for (int64_t j = threadIdx.x; j < packs; j += blockDim.x) {
    Pack<T> p = loadPack(x, base + j * kVec, true), out;
#pragma unroll
    for (int k = 0; k < kVec; ++k) st(out.v, k, rs.out(ld(p.v, k), logOut));
    *reinterpret_cast<Pack<T>*>(y + base + j * kVec) = out;
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

cudaError_t copyStrided(size_t elemBytes, const Strides<2>& full, const void* src, void* dst, cudaStream_t stream) {
  int64_t n = full.numel();
  if (n == 0) return cudaSuccess;
  const Strides<2> s = collapse(full);
  return withBytes(elemBytes, [&](auto tag) {
    using T = decltype(tag);
    auto* from = static_cast<const T*>(src);
    auto* to = static_cast<T*>(dst);
    withIdx(n, [&](auto idx) {
      copyKernel<T, decltype(idx)><<<blocksFor(n), kThreads, 0, stream>>>(s, n, from, to);
    });
    return launched();
  });
}

cudaError_t elementwise(EwOp op, Elt in, const Strides<3>& full, const void* a, const void* b, void* y, float a0,
                        float a1, cudaStream_t stream) {
  int64_t n = full.numel();
  if (n == 0) return cudaSuccess;
  const Strides<3> s = collapse(full);
  return withFloat(in, [&](auto tag) {
    using T = decltype(tag);
    const T* pa = static_cast<const T*>(a);
    const T* pb = static_cast<const T*>(b);
    auto run = [&](auto out) {
      using O = std::remove_pointer_t<decltype(out)>;
      const void* const ptrs[3] = {out, pa, pb};
      const size_t bytes[3] = {sizeof(O), sizeof(T), sizeof(T)};
      const bool vec = vectorizable(s, ptrs, bytes);
      withIdx(n, [&](auto idx) {
        using I = decltype(idx);
        if (vec) ewVecKernel<T, O, I><<<blocksFor(n / kVec), kThreads, 0, stream>>>(op, s, n / kVec, pa, pb, out, a0, a1);
        else ewKernel<T, O, I><<<blocksFor(n), kThreads, 0, stream>>>(op, s, n, pa, pb, out, a0, a1);
      });
    };
    if (ewIsCompare(op)) run(static_cast<uint8_t*>(y));
    else run(static_cast<T*>(y));
    return launched();
  });
}

cudaError_t where(size_t elemBytes, const Strides<4>& full, const void* cond, const void* a, const void* b, void* y,
                  cudaStream_t stream) {
  int64_t n = full.numel();
  if (n == 0) return cudaSuccess;
  const Strides<4> s = collapse(full);
  return withBytes(elemBytes, [&](auto tag) {
    using T = decltype(tag);
    auto* c = static_cast<const uint8_t*>(cond);
    auto* pa = static_cast<const T*>(a);
    auto* pb = static_cast<const T*>(b);
    auto* py = static_cast<T*>(y);
    const void* const ptrs[4] = {py, c, pa, pb};
    const size_t bytes[4] = {sizeof(T), 1, sizeof(T), sizeof(T)};
    const bool vec = vectorizable(s, ptrs, bytes);
    withIdx(n, [&](auto idx) {
      using I = decltype(idx);
      if (vec) whereVecKernel<T, I><<<blocksFor(n / kVec), kThreads, 0, stream>>>(s, n / kVec, c, pa, pb, py);
      else whereKernel<T, I><<<blocksFor(n), kThreads, 0, stream>>>(s, n, c, pa, pb, py);
    });
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
    const uintptr_t align = sizeof(T) * kVec;
    if (inner == 1 && n % kVec == 0 && reinterpret_cast<uintptr_t>(x) % align == 0 &&
        reinterpret_cast<uintptr_t>(y) % align == 0)
      softmaxRowVecKernel<T><<<unsigned(rows), kThreads, 0, stream>>>(log, n, static_cast<const T*>(x),
                                                                      static_cast<T*>(y));
    else
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

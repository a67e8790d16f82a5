// matmul and gemm. f32 uses OpenBLAS sgemm, f64 dgemm, f16/bf16 widen to f32
// and round the result; integers use exact wrapping loops in their own type.
#include <cblas.h>

#include <cstring>
#include <type_traits>
#include <vector>

#include "ir/interpreter.h"
#include "ir/kernel_util.h"

namespace sp::ir {

namespace {

// Multiply-adds up to which a float gemm is a plain loop (accumulated in
// double) rather than an OpenBLAS call: OpenBLAS takes a buffer of its own
// on a thread's first call and, when the process is short of memory then,
// retries for ever instead of failing; small products (most of a
// witness's) never need it. reserveBlasBuffers takes it up front.
constexpr int64_t kSmallGemmMacs = int64_t(1) << 15;

// C[M,N] = alpha * op(A) @ op(B) + beta * C, row-major with leading
// dimensions lda, ldb, ldc; op transposes when asked.
template <typename T>
void gemmTyped(bool ta, bool tb, int64_t m, int64_t n, int64_t k, double alpha, const T* a, int64_t lda,
               const T* b, int64_t ldb, double beta, T* c, int64_t ldc) {
  if (m == 0 || n == 0) return;
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
    if (k == 0) {
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) c[i * ldc + j] = beta == 0 ? T(0) : T(beta) * c[i * ldc + j];
      return;
    }
    if (m * n * k <= kSmallGemmMacs) {
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
          double acc = 0;
          for (int64_t p = 0; p < k; ++p)
            acc += double(ta ? a[p * lda + i] : a[i * lda + p]) * double(tb ? b[j * ldb + p] : b[p * ldb + j]);
          T& out = c[i * ldc + j];
          out = T(alpha * acc + (beta == 0 ? 0.0 : beta * double(out)));
        }
      return;
    }
    auto tA = ta ? CblasTrans : CblasNoTrans, tB = tb ? CblasTrans : CblasNoTrans;
    if constexpr (std::is_same_v<T, float>)
      cblas_sgemm(CblasRowMajor, tA, tB, int(m), int(n), int(k), float(alpha), a, int(lda), b, int(ldb),
                  float(beta), c, int(ldc));
    else
      cblas_dgemm(CblasRowMajor, tA, tB, int(m), int(n), int(k), alpha, a, int(lda), b, int(ldb), beta, c,
                  int(ldc));
  } else {
    using U = std::make_unsigned_t<T>;
    bool exact = alpha == 1 && (beta == 0 || beta == 1);
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        U acc = 0;
        for (int64_t p = 0; p < k; ++p) {
          T av = ta ? a[p * lda + i] : a[i * lda + p];
          T bv = tb ? b[j * ldb + p] : b[p * ldb + j];
          acc = U(acc + U(U(av) * U(bv)));
        }
        T& out = c[i * ldc + j];
        if (exact) out = beta == 0 ? T(acc) : T(U(out) + acc);
        else out = T(alpha * double(T(acc)) + (beta == 0 ? 0.0 : beta * double(out)));
      }
    }
  }
}

// Multiply-adds per gemm call above which a gemm runs in blocks of rows,
// with a deadline poll between blocks (kernelInterrupted): about 0.1 to 0.5 s
// of OpenBLAS on a few cores. The blocking depends only on the sizes.
constexpr int64_t kGemmBlockMacs = int64_t(1) << 34;

// gemmTyped on contiguous operands (lda, ldb, ldc implied by the sizes),
// large products split into blocks of rows of C.
template <typename T>
void gemmBlocked(bool ta, bool tb, int64_t m, int64_t n, int64_t k, double alpha, const T* a, const T* b,
                 double beta, T* c) {
  int64_t lda = ta ? m : k, ldb = tb ? k : n;
  int64_t nk = std::max<int64_t>(1, n * k);
  int64_t rows = m > kGemmBlockMacs / nk ? std::max<int64_t>(1, kGemmBlockMacs / nk) : m;
  for (int64_t r = 0; r < m; r += rows) {
    if (r > 0 && kernelInterrupted()) return;
    gemmTyped<T>(ta, tb, std::min(rows, m - r), n, k, alpha, ta ? a + r : a + r * k, lda, b, ldb, beta, c + r * n, n);
  }
}

template <typename T>
void matmulTyped(const Tensor& a, const Tensor& b, Tensor& y) {
  // Promote 1-D operands to matrices.
  std::vector<int64_t> da = a.dims(), db = b.dims();
  if (da.size() == 1) da.insert(da.begin(), 1);
  if (db.size() == 1) db.push_back(1);
  int64_t m = da[da.size() - 2], k = da.back(), n = db.back();
  std::vector<int64_t> ba(da.begin(), da.end() - 2), bb(db.begin(), db.end() - 2);
  size_t br = std::max(ba.size(), bb.size());
  std::vector<int64_t> batch(br, 1);
  for (size_t i = 0; i < br; ++i) {
    int64_t x = i + ba.size() >= br ? ba[i + ba.size() - br] : 1;
    int64_t z = i + bb.size() >= br ? bb[i + bb.size() - br] : 1;
    batch[i] = std::max(x, z);
  }
  const T* pa = a.data<T>();
  const T* pb = b.data<T>();
  T* pc = y.mutableData<T>();
  int64_t nb = prodDims(batch, 0, br);
  int64_t batchA = prodDims(ba, 0, ba.size()), batchB = prodDims(bb, 0, bb.size());
  if (batchB == 1 && batchA == nb) {  // shared right operand: one big gemm
    gemmBlocked<T>(false, false, nb * m, n, k, 1.0, pa, pb, 0.0, pc);
    return;
  }
  // Batch offsets (in matrices) of each operand, by broadcasting.
  StridedPlan p = broadcastPlan(batch, {ba, bb});
  std::vector<std::pair<int64_t, int64_t>> offs;
  forEachRun<2>(p, 0, nb, [&](int64_t, const std::array<int64_t, 2>& off, int64_t len) {
    for (int64_t i = 0; i < len; ++i)
      offs.emplace_back(off[0] + i * p.strides[0].back(), off[1] + i * p.strides[1].back());
  });
  auto body = [&](int64_t beg, int64_t end) {
    for (int64_t i = beg; i < end; ++i)
      gemmBlocked<T>(false, false, m, n, k, 1.0, pa + offs[size_t(i)].first * m * k,
                     pb + offs[size_t(i)].second * k * n, 0.0, pc + i * m * n);
  };
  // OpenBLAS threads each float gemm; split only integer batches.
  if constexpr (std::is_floating_point_v<T>) {
    for (int64_t i = 0; i < nb; ++i) {
      if (i > 0 && kernelInterrupted()) return;
      body(i, i + 1);
    }
  }
  else parallelFor(nb, body, std::max<int64_t>(1, (int64_t(1) << 16) / std::max<int64_t>(1, m * n * k)));
}

}  // namespace

void reserveBlasBuffers() {
  // One product large enough for OpenBLAS to run it on its threads: each
  // takes its buffer now, while the process has memory to give.
  constexpr int kN = 256;
  std::vector<float> a(size_t(kN) * kN, 1.0f), c(size_t(kN) * kN, 0.0f);
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, kN, kN, kN, 1.0f, a.data(), kN, a.data(), kN, 0.0f,
              c.data(), kN);
}

Status kernelMatMul(OpKind op, const AttrMap& attrs, std::span<const Tensor> in, std::vector<Tensor>& out) {
  SP_ASSIGN(Types t, inferTensors(op, attrs, in));
  Tensor a = widenHalf(in[0]), b = widenHalf(in[1]);
  Tensor y(a.dtype(), concreteDims(t[0].shape));
  if (y.numel() > 0)
    visitDType(a.dtype(), [&](auto tag) { matmulTyped<decltype(tag)>(a, b, y); return 0; });
  out.push_back(y.dtype() == t[0].dtype ? y : y.castTo(t[0].dtype));
  return okStatus();
}

Status kernelGemm(OpKind op, const AttrMap& attrs, std::span<const Tensor> in, std::vector<Tensor>& out) {
  SP_ASSIGN(Types t, inferTensors(op, attrs, in));
  Tensor a = widenHalf(in[0]), b = widenHalf(in[1]);
  auto dims = concreteDims(t[0].shape);
  bool ta = attrInt(attrs, "trans_a") != 0, tb = attrInt(attrs, "trans_b") != 0;
  double alpha = attrFloat(attrs, "alpha"), beta = attrFloat(attrs, "beta");
  int64_t k = ta ? a.dims()[0] : a.dims()[1];
  Tensor y(a.dtype(), dims);
  if (in.size() == 3 && beta != 0) {
    Tensor c = broadcastTo(widenHalf(in[2]), dims);
    if (c.numel()) std::memcpy(y.mutableRaw(), c.raw(), c.nbytes());
  } else {
    beta = 0;
  }
  visitDType(a.dtype(), [&](auto tag) {
    using T = decltype(tag);
    gemmBlocked<T>(ta, tb, dims[0], dims[1], k, alpha, a.data<T>(), b.data<T>(), beta, y.mutableData<T>());
    return 0;
  });
  out.push_back(y.dtype() == t[0].dtype ? y : y.castTo(t[0].dtype));
  return okStatus();
}

}  // namespace sp::ir

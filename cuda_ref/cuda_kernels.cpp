#include "cuda_ref/cuda_kernels.h"

#include <climits>

#include "ir/infer_util.h"
#include "ir/shape.h"

namespace sp::cuda_ref {

namespace {

using ir::OpKind;
using Dims = std::vector<int64_t>;

std::optional<dev::EwOp> ewOf(OpKind op, const ir::AttrMap& attrs) {
  switch (op) {
#define SP_EW(K) \
  case OpKind::K: return dev::EwOp::K;
    SP_EW(Neg) SP_EW(Abs) SP_EW(Exp) SP_EW(Log) SP_EW(Sqrt) SP_EW(Rsqrt) SP_EW(Reciprocal) SP_EW(Tanh)
    SP_EW(Sigmoid) SP_EW(Relu) SP_EW(Silu) SP_EW(Erf) SP_EW(Sin) SP_EW(Cos) SP_EW(Floor) SP_EW(Ceil) SP_EW(Sign)
    SP_EW(Clip) SP_EW(Add) SP_EW(Sub) SP_EW(Mul) SP_EW(Div) SP_EW(Pow) SP_EW(Max) SP_EW(Min)
    SP_EW(Eq) SP_EW(Ne) SP_EW(Lt) SP_EW(Le) SP_EW(Gt) SP_EW(Ge)
#undef SP_EW
    case OpKind::Gelu: return ir::attrStr(attrs, "approximate") == "tanh" ? dev::EwOp::GeluTanh : dev::EwOp::Gelu;
    default: return std::nullopt;
  }
}

std::optional<dev::RedOp> redOf(OpKind op) {
  switch (op) {
    case OpKind::ReduceSum: return dev::RedOp::Sum;
    case OpKind::ReduceMean: return dev::RedOp::Mean;
    case OpKind::ReduceMax: return dev::RedOp::Max;
    case OpKind::ReduceMin: return dev::RedOp::Min;
    case OpKind::ReduceProd: return dev::RedOp::Prod;
    default: return std::nullopt;
  }
}

int64_t prod(const Dims& d, size_t from, size_t to) {
  int64_t n = 1;
  for (size_t k = from; k < to; ++k) n *= d[k];
  return n;
}

Result<bool> launched(cudaError_t e, const char* what) {
  if (e == cudaErrorNotSupported) return false;
  SP_TRY(cudaCheck(e, what));
  return true;
}

Result<bool> copyAll(const DevTensor& x, const DevTensor& y, cudaStream_t stream) {
  SP_TRY(cudaCheck(cudaMemcpyAsync(y.ptr, x.ptr, x.nbytes(), cudaMemcpyDeviceToDevice, stream), "copy"));
  return true;
}

Result<bool> elementwise(dev::EwOp ew, const ir::AttrMap& attrs, std::span<const DevTensor> in, const DevTensor& y,
                         const KernelCtx& c) {
  if (!isDeviceFloat(in[0].dtype) || (in.size() > 1 && in[1].dtype != in[0].dtype)) return false;
  std::vector<std::vector<int64_t>> st = {contiguousStrides(y.dims), broadcastStrides(in[0].dims, y.dims)};
  st.push_back(in.size() > 1 ? broadcastStrides(in[1].dims, y.dims) : Dims(y.dims.size(), 0));
  auto s = makeStrides<3>(y.dims, st);
  if (!s) return false;
  float a0 = ew == dev::EwOp::Clip ? float(ir::attrFloat(attrs, "min")) : 0.0f;
  float a1 = ew == dev::EwOp::Clip ? float(ir::attrFloat(attrs, "max")) : 0.0f;
  return launched(dev::elementwise(ew, *eltOf(in[0].dtype), *s, in[0].ptr, in.size() > 1 ? in[1].ptr : nullptr, y.ptr,
                                   a0, a1, c.stream),
                  "elementwise kernel");
}

Result<bool> whereOp(std::span<const DevTensor> in, const DevTensor& y, const KernelCtx& c) {
  auto s = makeStrides<4>(y.dims, {contiguousStrides(y.dims), broadcastStrides(in[0].dims, y.dims),
                                   broadcastStrides(in[1].dims, y.dims), broadcastStrides(in[2].dims, y.dims)});
  if (!s || in[0].dtype != ir::DType::Bool) return false;
  return launched(dev::where(ir::dtypeSize(y.dtype), *s, in[0].ptr, in[1].ptr, in[2].ptr, y.ptr, c.stream), "where");
}

Result<bool> castOp(const DevTensor& x, const DevTensor& y, const KernelCtx& c) {
  // To a float type from anything the device loads; integers only widen.
  bool toFloat = ir::isFloat(y.dtype) && eltOf(x.dtype);
  bool widen = x.dtype == ir::DType::I32 && y.dtype == ir::DType::I64;
  if (!toFloat && !widen) return x.dtype == y.dtype ? copyAll(x, y, c.stream) : Result<bool>(false);
  return launched(dev::cast(*eltOf(x.dtype), *eltOf(y.dtype), x.numel(), x.ptr, y.ptr, c.stream), "cast");
}

// numpy matmul and ONNX gemm (no broadcast of mismatched batch dims: host).
Result<bool> gemm(std::span<const DevTensor> in, const DevTensor& y, bool ta, bool tb, double alpha, double beta,
                  const KernelCtx& c) {
  const DevTensor &a = in[0], &b = in[1];
  if (a.dtype != b.dtype || a.dtype != y.dtype || (!isDeviceFloat(a.dtype) && a.dtype != ir::DType::F64)) return false;
  Dims ad = a.dims, bd = b.dims;
  if (ad.size() == 1) ad.insert(ad.begin(), 1);
  if (bd.size() == 1) bd.push_back(1);
  int64_t m = ta ? ad[ad.size() - 1] : ad[ad.size() - 2], k = ta ? ad[ad.size() - 2] : ad[ad.size() - 1];
  int64_t n = tb ? bd[bd.size() - 2] : bd[bd.size() - 1];
  int64_t batchA = prod(ad, 0, ad.size() - 2), batchB = prod(bd, 0, bd.size() - 2);
  Dims ba(ad.begin(), ad.end() - 2), bb(bd.begin(), bd.end() - 2);
  while (ba.size() < bb.size()) ba.insert(ba.begin(), 1);
  while (bb.size() < ba.size()) bb.insert(bb.begin(), 1);
  int64_t batch = 1, strideA = m * k, strideB = k * n;
  if (batchB == 1 && !ta) {
    m *= batchA;  // a's batch folds into its rows
  } else if (ba == bb) {
    batch = batchA;
  } else if (batchA == 1) {
    batch = batchB, strideA = 0;
  } else {
    return false;
  }
  if (m == 0 || n == 0 || k == 0) return false;
  if (m > INT_MAX || n > INT_MAX || k > INT_MAX || batch > INT_MAX) return false;
  cudaDataType_t t = a.dtype == ir::DType::F32 ? CUDA_R_32F
                     : a.dtype == ir::DType::F16 ? CUDA_R_16F
                     : a.dtype == ir::DType::BF16 ? CUDA_R_16BF
                                                  : CUDA_R_64F;
  bool f64 = a.dtype == ir::DType::F64;
  float af = float(alpha), bf = float(beta);
  const void* pa = f64 ? static_cast<const void*>(&alpha) : &af;
  const void* pb = f64 ? static_cast<const void*>(&beta) : &bf;
  SP_TRY(cublasCheck(cublasSetStream(c.blas, c.stream), "cublasSetStream"));
  // Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T.
  SP_TRY(cublasCheck(
      cublasGemmStridedBatchedEx(c.blas, tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N, int(n), int(m),
                                 int(k), pa, b.ptr, t, int(tb ? k : n), strideB, a.ptr, t, int(ta ? m : k), strideA, pb,
                                 y.ptr, t, int(n), m * n, int(batch), f64 ? CUBLAS_COMPUTE_64F : CUBLAS_COMPUTE_32F,
                                 CUBLAS_GEMM_DEFAULT),
      "cublasGemmStridedBatchedEx"));
  return true;
}

Result<bool> gemmOp(const ir::AttrMap& attrs, std::span<const DevTensor> in, const DevTensor& y, const KernelCtx& c) {
  double beta = 0;
  if (in.size() > 2) {  // C broadcast into y first, then y = alpha A B + beta y
    if (in[2].dtype != y.dtype) return false;
    auto s = makeStrides<2>(y.dims, {contiguousStrides(y.dims), broadcastStrides(in[2].dims, y.dims)});
    SP_TRY(cudaCheck(dev::copyStrided(ir::dtypeSize(y.dtype), *s, in[2].ptr, y.ptr, c.stream), "gemm bias"));
    beta = ir::attrFloat(attrs, "beta");
  }
  return gemm(in.subspan(0, 2), y, ir::attrInt(attrs, "trans_a") != 0, ir::attrInt(attrs, "trans_b") != 0,
              ir::attrFloat(attrs, "alpha"), beta, c);
}

Result<bool> reduceOp(dev::RedOp r, const ir::AttrMap& attrs, const DevTensor& x, const DevTensor& y,
                      const KernelCtx& c) {
  if (!isDeviceFloat(x.dtype)) return false;
  SP_ASSIGN(Dims axes, ir::normAxes(ir::attrInts(attrs, "axes"), int64_t(x.dims.size())));
  std::vector<bool> reduced(x.dims.size(), axes.empty());
  for (int64_t a : axes) reduced[size_t(a)] = true;
  Dims xs = contiguousStrides(x.dims), keptDims, keptX, redDims, redX;
  for (size_t k = 0; k < x.dims.size(); ++k) {
    (reduced[k] ? redDims : keptDims).push_back(x.dims[k]);
    (reduced[k] ? redX : keptX).push_back(xs[k]);
  }
  auto kept = makeStrides<2>(keptDims, {contiguousStrides(keptDims), keptX});
  auto red = makeStrides<2>(redDims, {Dims(redDims.size(), 0), redX});
  if (!kept || !red) return false;
  return launched(dev::reduce(r, *eltOf(x.dtype), *kept, *red, x.ptr, y.ptr, c.stream), "reduce");
}

Result<bool> softmaxOp(bool log, const ir::AttrMap& attrs, const DevTensor& x, const DevTensor& y, const KernelCtx& c) {
  if (!isDeviceFloat(x.dtype)) return false;
  SP_ASSIGN(int64_t a, ir::normAxis(ir::attrInt(attrs, "axis"), int64_t(x.dims.size()), "softmax"));
  size_t ax = size_t(a);
  return launched(dev::softmax(log, *eltOf(x.dtype), prod(x.dims, 0, ax), x.dims[ax],
                               prod(x.dims, ax + 1, x.dims.size()), x.ptr, y.ptr, c.stream),
                  "softmax");
}

// Scale and bias broadcast over the normalized dims; on the device when they
// repeat along a row (their dims, leading 1s dropped, a suffix of the row's).
Result<bool> normOp(bool rms, const ir::AttrMap& attrs, std::span<const DevTensor> in, const DevTensor& y,
                    const KernelCtx& c) {
  const DevTensor& x = in[0];
  if (!isDeviceFloat(x.dtype)) return false;
  SP_ASSIGN(int64_t a, ir::normAxis(ir::attrInt(attrs, "axis"), int64_t(x.dims.size()), "norm"));
  Dims row(x.dims.begin() + a, x.dims.end());
  for (size_t i = 1; i < in.size(); ++i) {
    if (in[i].dtype != x.dtype) return false;
    Dims d = in[i].dims;
    while (!d.empty() && d.front() == 1 && d.size() > 0) d.erase(d.begin());
    if (d.size() > row.size() || !std::equal(d.begin(), d.end(), row.end() - int64_t(d.size()))) return false;
  }
  int64_t n = prod(row, 0, row.size());
  return launched(dev::norm(rms, *eltOf(x.dtype), n ? x.numel() / n : 0, n, ir::attrFloat(attrs, "epsilon"), x.ptr,
                            in.size() > 1 ? in[1].ptr : nullptr, in.size() > 1 ? in[1].numel() : 1,
                            in.size() > 2 ? in[2].ptr : nullptr, in.size() > 2 ? in[2].numel() : 1, y.ptr, c.stream),
                  "norm");
}

Result<bool> transposeOp(const ir::AttrMap& attrs, const DevTensor& x, const DevTensor& y, const KernelCtx& c) {
  const auto& perm = ir::attrInts(attrs, "perm");
  Dims xs = contiguousStrides(x.dims), src;
  for (int64_t p : perm) src.push_back(xs[size_t(p)]);
  auto s = makeStrides<2>(y.dims, {contiguousStrides(y.dims), src});
  if (!s) return false;
  return launched(dev::copyStrided(ir::dtypeSize(x.dtype), *s, x.ptr, y.ptr, c.stream), "transpose");
}

Result<bool> sliceOp(const ir::AttrMap& attrs, const DevTensor& x, const DevTensor& y, const KernelCtx& c) {
  const auto& starts = ir::attrInts(attrs, "starts");
  const auto& ends = ir::attrInts(attrs, "ends");
  Dims axes = ir::attrInts(attrs, "axes"), steps = ir::attrInts(attrs, "steps");
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(int64_t(i));
  if (steps.empty()) steps.assign(starts.size(), 1);
  SP_ASSIGN(Dims nax, ir::normAxes(axes, int64_t(x.dims.size())));
  Dims s = contiguousStrides(x.dims);
  int64_t base = 0;
  for (size_t i = 0; i < nax.size(); ++i) {  // as ir/kernels_layout.cpp
    size_t a = size_t(nax[i]);
    auto [first, len] = ir::sliceRange(starts[i], ends[i], steps[i], x.dims[a]);
    if (len > 0) base += first * s[a];
    s[a] *= steps[i];
  }
  auto st = makeStrides<2>(y.dims, {contiguousStrides(y.dims), s}, {0, base});
  if (!st) return false;
  return launched(dev::copyStrided(ir::dtypeSize(x.dtype), *st, x.ptr, y.ptr, c.stream), "slice");
}

// Concat (inputs into the output) and split (the input into outputs): box
// copies along the axis.
Result<bool> concatSplit(bool concat, const ir::AttrMap& attrs, std::span<const DevTensor> in,
                         std::span<const DevTensor> out, const KernelCtx& c) {
  const DevTensor& whole = concat ? out[0] : in[0];
  std::span<const DevTensor> parts = concat ? in : out;
  SP_ASSIGN(int64_t axis, ir::normAxis(ir::attrInt(attrs, "axis"), int64_t(whole.dims.size()), "concat"));
  int64_t at = 0;
  for (const DevTensor& p : parts) {
    Box b{p.dims, concat ? p.dims : whole.dims, concat ? whole.dims : p.dims, axis, concat ? 0 : at, axis,
          concat ? at : 0};
    SP_TRY(copyBox(b, ir::dtypeSize(whole.dtype), concat ? p.ptr : whole.ptr, concat ? whole.ptr : p.ptr, c.stream));
    at += p.dims[size_t(axis)];
  }
  return true;
}

Result<bool> expandOp(const DevTensor& x, const DevTensor& y, const KernelCtx& c) {
  auto s = makeStrides<2>(y.dims, {contiguousStrides(y.dims), broadcastStrides(x.dims, y.dims)});
  if (!s) return false;
  return launched(dev::copyStrided(ir::dtypeSize(x.dtype), *s, x.ptr, y.ptr, c.stream), "expand");
}

Result<bool> gatherOp(const ir::AttrMap& attrs, std::span<const DevTensor> in, const DevTensor& y, const KernelCtx& c) {
  const DevTensor &x = in[0], &idx = in[1];
  if (idx.dtype != ir::DType::I64 && idx.dtype != ir::DType::I32) return false;
  SP_ASSIGN(int64_t a, ir::normAxis(ir::attrInt(attrs, "axis"), int64_t(x.dims.size()), "gather"));
  size_t ax = size_t(a);
  SP_TRY(cudaCheck(cudaMemsetAsync(c.badIndex, 0, sizeof(int64_t), c.stream), "gather flag"));
  SP_TRY(cudaCheck(dev::gather(ir::dtypeSize(x.dtype), idx.dtype == ir::DType::I64, prod(x.dims, 0, ax), x.dims[ax],
                               prod(x.dims, ax + 1, x.dims.size()), idx.numel(), x.ptr, idx.ptr, y.ptr, c.badIndex,
                               c.stream),
                   "gather"));
  int64_t bad = 0;
  SP_TRY(cudaCheck(cudaMemcpyAsync(&bad, c.badIndex, sizeof bad, cudaMemcpyDeviceToHost, c.stream), "gather flag"));
  SP_TRY(cudaCheck(cudaStreamSynchronize(c.stream), "gather"));
  return bad == 0;  // out of range: the host kernel reports it
}

}  // namespace

Result<bool> runDeviceKernel(OpKind op, const ir::AttrMap& attrs, std::span<const DevTensor> in,
                             std::span<const DevTensor> out, const KernelCtx& c) {
  if (auto ew = ewOf(op, attrs)) return elementwise(*ew, attrs, in, out[0], c);
  if (auto r = redOf(op)) return reduceOp(*r, attrs, in[0], out[0], c);
  switch (op) {
    case OpKind::Identity:
    case OpKind::Reshape:
    case OpKind::Squeeze:
    case OpKind::Unsqueeze: return copyAll(in[0], out[0], c.stream);
    case OpKind::Cast: return castOp(in[0], out[0], c);
    case OpKind::Where: return whereOp(in, out[0], c);
    case OpKind::MatMul: return gemm(in, out[0], false, false, 1, 0, c);
    case OpKind::Gemm: return gemmOp(attrs, in, out[0], c);
    case OpKind::Softmax:
    case OpKind::LogSoftmax: return softmaxOp(op == OpKind::LogSoftmax, attrs, in[0], out[0], c);
    case OpKind::LayerNorm:
    case OpKind::RmsNorm: return normOp(op == OpKind::RmsNorm, attrs, in, out[0], c);
    case OpKind::Transpose: return transposeOp(attrs, in[0], out[0], c);
    case OpKind::Slice: return sliceOp(attrs, in[0], out[0], c);
    case OpKind::Concat: return concatSplit(true, attrs, in, out, c);
    case OpKind::Split: return concatSplit(false, attrs, in, out, c);
    case OpKind::Expand: return expandOp(in[0], out[0], c);
    case OpKind::Gather: return gatherOp(attrs, in, out[0], c);
    default: return false;
  }
}

}  // namespace sp::cuda_ref

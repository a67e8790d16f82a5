#include "cuda_ref/cuda_util.h"

namespace sp::cuda_ref {

Status cudaCheck(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return okStatus();
  return makeError("cuda-error", std::string(what) + ": " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")");
}

Status ncclCheck(ncclResult_t r, const char* what) {
  if (r == ncclSuccess) return okStatus();
  return makeError("nccl-error", std::string(what) + ": " + ncclGetErrorString(r) +
                                     (r == ncclInvalidUsage ? " (NCCL_DEBUG=WARN says more; two ranks of one communicator "
                                                              "on one GPU are refused by NCCL)"
                                                            : ""));
}

Status cublasCheck(cublasStatus_t s, const char* what) {
  if (s == CUBLAS_STATUS_SUCCESS) return okStatus();
  return makeError("cublas-error", std::string(what) + ": " + cublasGetStatusName(s) + " (" + cublasGetStatusString(s) + ")");
}

int64_t DevTensor::numel() const {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

std::optional<dev::Elt> eltOf(ir::DType t) {
  switch (t) {
    case ir::DType::F32: return dev::Elt::F32;
    case ir::DType::F16: return dev::Elt::F16;
    case ir::DType::BF16: return dev::Elt::BF16;
    case ir::DType::F64: return dev::Elt::F64;
    case ir::DType::I64: return dev::Elt::I64;
    case ir::DType::I32: return dev::Elt::I32;
    case ir::DType::U8:
    case ir::DType::Bool: return dev::Elt::U8;
    default: return std::nullopt;
  }
}

bool isDeviceFloat(ir::DType t) { return t == ir::DType::F32 || t == ir::DType::F16 || t == ir::DType::BF16; }

std::vector<int64_t> contiguousStrides(const std::vector<int64_t>& dims) {
  std::vector<int64_t> s(dims.size());
  int64_t acc = 1;
  for (size_t k = dims.size(); k-- > 0;) {
    s[k] = acc;
    acc *= dims[k];
  }
  return s;
}

std::vector<int64_t> broadcastStrides(const std::vector<int64_t>& in, const std::vector<int64_t>& out) {
  std::vector<int64_t> full = contiguousStrides(in), s(out.size(), 0);
  size_t lead = out.size() - in.size();
  for (size_t k = 0; k < in.size(); ++k) s[lead + k] = in[k] == 1 && out[lead + k] != 1 ? 0 : full[k];
  return s;
}

Status copyBox(const Box& b, size_t elemBytes, const void* src, void* dst, cudaStream_t stream) {
  std::vector<int64_t> ss = contiguousStrides(b.srcDims), ds = contiguousStrides(b.dstDims);
  auto at = [](const std::vector<int64_t>& s, int64_t axis, int64_t i) { return s.empty() ? 0 : i * s[size_t(axis)]; };
  auto st = makeStrides<2>(b.dims, {ds, ss}, {at(ds, b.dstAxis, b.dstAt), at(ss, b.srcAxis, b.srcAt)});
  if (!st) return makeError("cuda-rank", "a copy of more than " + std::to_string(dev::kMaxRank) + " dims");
  return cudaCheck(dev::copyStrided(elemBytes, *st, src, dst, stream), "strided copy");
}

}  // namespace sp::cuda_ref

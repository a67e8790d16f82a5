#pragma once
// Shared by the files of the CUDA backend: checked CUDA/NCCL/cuBLAS calls
// as sp Errors, device tensors (views of an arena) and the strided layouts
// the kernels of device_ops.h take.
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <optional>
#include <string>
#include <vector>

#include "cuda_ref/device_ops.h"
#include "ir/tensor.h"

namespace sp::cuda_ref {

Status cudaCheck(cudaError_t e, const char* what);
Status ncclCheck(ncclResult_t r, const char* what);
Status cublasCheck(cublasStatus_t s, const char* what);

// A tensor in device memory (a buffer of an arena or scratch).
struct DevTensor {
  ir::DType dtype = ir::DType::F32;
  std::vector<int64_t> dims;
  void* ptr = nullptr;
  int64_t numel() const;
  size_t nbytes() const { return size_t(numel()) * ir::dtypeSize(dtype); }
};

// The device element type of an IR dtype; none for what no kernel takes
// (bool counts as U8 only where the caller says so).
std::optional<dev::Elt> eltOf(ir::DType t);
bool isDeviceFloat(ir::DType t);  // f32, f16, bf16: the arithmetic kernels' types

std::vector<int64_t> contiguousStrides(const std::vector<int64_t>& dims);
// Strides of `in` read as numpy-broadcast to `out` (aligned at the end; 0 on
// broadcast dims).
std::vector<int64_t> broadcastStrides(const std::vector<int64_t>& in, const std::vector<int64_t>& out);

// The index space `dims` with one stride list per operand; none past
// dev::kMaxRank dims.
template <int N>
std::optional<dev::Strides<N>> makeStrides(const std::vector<int64_t>& dims,
                                           const std::vector<std::vector<int64_t>>& strides,
                                           const std::vector<int64_t>& bases = {}) {
  if (dims.size() > size_t(dev::kMaxRank)) return std::nullopt;
  dev::Strides<N> s;
  s.rank = int(dims.size());
  for (size_t k = 0; k < dims.size(); ++k) {
    s.dims[k] = dims[k];
    for (int o = 0; o < N; ++o) s.stride[o][k] = strides[size_t(o)][k];
  }
  for (size_t o = 0; o < bases.size(); ++o) s.base[o] = bases[o];
  return s;
}

// A box of `box` dims copied between two contiguous tensors: from `src`
// (dims srcDims) starting at index srcAt along srcAxis, to `dst` (dims
// dstDims) at dstAt along dstAxis. Concat, split, slices of collectives and
// the packing around NCCL are all such copies.
struct Box {
  std::vector<int64_t> dims;
  std::vector<int64_t> srcDims, dstDims;
  int64_t srcAxis = 0, srcAt = 0, dstAxis = 0, dstAt = 0;
};
Status copyBox(const Box& b, size_t elemBytes, const void* src, void* dst, cudaStream_t stream);

}  // namespace sp::cuda_ref

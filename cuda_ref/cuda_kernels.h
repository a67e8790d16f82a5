#pragma once
// IR kernels on the device: each op mapped onto the generic kernels of
// device_ops.h or cuBLAS. What has no device kernel (an op, or dtypes and
// shapes an op's device kernel does not take) is reported, and the caller
// runs the interpreter's kernel on the host instead.
#include <span>

#include "cuda_ref/cuda_util.h"
#include "ir/op.h"

namespace sp::cuda_ref {

struct KernelCtx {
  cudaStream_t stream = nullptr;
  cublasHandle_t blas = nullptr;
  int64_t* badIndex = nullptr;  // device: set by gather on an index out of range
};

// True: enqueued on ctx.stream. False: no device kernel for this step (the
// caller falls back to the host; an index out of range also returns false,
// so the host kernel reports it as the interpreter does).
Result<bool> runDeviceKernel(ir::OpKind op, const ir::AttrMap& attrs, std::span<const DevTensor> in,
                             std::span<const DevTensor> out, const KernelCtx& ctx);

}  // namespace sp::cuda_ref

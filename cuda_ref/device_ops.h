#pragma once
// Device kernels of the CUDA backend (device_ops.cu), callable from plain
// C++: no IR types here (the .cu file is compiled by nvcc without ir/
// headers). Each launcher enqueues on `stream` and returns the launch error.
// Kernels are generic: one elementwise kernel over a table of functors
// (EwOp), one strided-index copy, one reduction over a strided set, each
// templated over the element type and computing in f32 (f16/bf16 rounded
// once when stored, as the interpreter does).
#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

namespace sp::cuda_ref::dev {

inline constexpr int kMaxRank = 8;

// Element types the arithmetic kernels take; byte-moving kernels take sizes.
enum class Elt : uint8_t { F32, F16, BF16, F64, I64, I32, U8 };

// The functor table of the elementwise kernel; Unary ops read a0/a1
// (clip bounds), comparisons write u8.
enum class EwOp : uint8_t {
  Neg, Abs, Exp, Log, Sqrt, Rsqrt, Reciprocal, Tanh, Sigmoid, Relu, Gelu, GeluTanh, Silu, Erf, Sin, Cos,
  Floor, Ceil, Sign, Clip,
  Add, Sub, Mul, Div, Pow, Max, Min,
  Eq, Ne, Lt, Le, Gt, Ge, And, Or, Xor,
};
bool ewIsBinary(EwOp op);
bool ewIsCompare(EwOp op);

// An index space of `rank` dims; each operand's element offset is
// base + sum(index[k] * stride[k]) (stride 0: broadcast).
template <int N>
struct Strides {
  int rank = 0;
  int64_t dims[kMaxRank] = {};
  int64_t stride[N][kMaxRank] = {};
  int64_t base[N] = {};
  int64_t numel() const {
    int64_t n = 1;
    for (int k = 0; k < rank; ++k) n *= dims[k];
    return n;
  }
};

// dst (operand 0) <- src (operand 1), elements of `elemBytes` (1, 2, 4, 8).
cudaError_t copyStrided(size_t elemBytes, const Strides<2>& s, const void* src, void* dst, cudaStream_t stream);

// Operands: 0 the output, 1 (and 2) the inputs. `in` is the input type;
// comparisons write u8, everything else `in`.
cudaError_t elementwise(EwOp op, Elt in, const Strides<3>& s, const void* a, const void* b, void* y, float a0,
                        float a1, cudaStream_t stream);

// y <- cond ? a : b; operands 0 y, 1 cond (u8), 2 a, 3 b.
cudaError_t where(size_t elemBytes, const Strides<4>& s, const void* cond, const void* a, const void* b, void* y,
                  cudaStream_t stream);

cudaError_t cast(Elt from, Elt to, int64_t n, const void* x, void* y, cudaStream_t stream);

enum class RedOp : uint8_t { Sum, Mean, Max, Min, Prod };
// One output element per kept index: `kept` (operand 0: output strides,
// operand 1: input strides) times the reduced set `red` (operand 1 strides).
cudaError_t reduce(RedOp op, Elt e, const Strides<2>& kept, const Strides<2>& red, const void* x, void* y,
                   cudaStream_t stream);

// x viewed as [outer, n, inner], normalized along n.
cudaError_t softmax(bool log, Elt e, int64_t outer, int64_t n, int64_t inner, const void* x, void* y,
                    cudaStream_t stream);

// Rows of n elements; scale/bias (may be null) have scaleN/biasN elements
// repeating along the row (a suffix of the normalized dims).
cudaError_t norm(bool rms, Elt e, int64_t rows, int64_t n, double eps, const void* x, const void* scale,
                 int64_t scaleN, const void* bias, int64_t biasN, void* y, cudaStream_t stream);

// out[o, i, r] = data[o, idx[i], r] (negative indices count from the end);
// an index outside [-axisDim, axisDim) sets *bad (device memory) to 1 + its
// position.
cudaError_t gather(size_t elemBytes, bool idx64, int64_t outer, int64_t axisDim, int64_t inner, int64_t nIdx,
                   const void* data, const void* idx, void* out, int64_t* bad, cudaStream_t stream);

// Collective reduction of g contributions stacked as [g, n], in member
// order: y = (x_0 op x_1) op x_2 ... (f16/bf16/f32 accumulate in f32, f64 in
// f64, integers in 64-bit wrapped, u8 as bool: Sum/Max or, Min and); Mean
// divides by g. As ir/collectives.
cudaError_t reduceMembers(RedOp op, Elt e, bool isBool, int64_t g, int64_t n, const void* stack, void* y,
                          cudaStream_t stream);

}  // namespace sp::cuda_ref::dev

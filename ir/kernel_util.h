#pragma once
// Internal helpers for the CPU kernels (ir/kernels_*.cpp): dtype dispatch,
// the strided broadcast iterator and a deterministic parallel-for.
#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <vector>

#include "ir/infer_util.h"

namespace sp::ir {

inline bool isHalf(DType t) { return t == DType::F16 || t == DType::BF16; }

// f16/bf16 tensors are computed in f32: widen before, round after.
inline Tensor widenHalf(const Tensor& t) { return isHalf(t.dtype()) ? t.castTo(DType::F32) : t; }

// Calls f(T{}) with the C++ element type of a numeric dtype (not f16/bf16,
// which kernels widen to f32 first; bool is passed as uint8_t).
template <typename F>
decltype(auto) visitDType(DType t, F&& f) {
  switch (t) {
    case DType::F32: return f(float{});
    case DType::F64: return f(double{});
    case DType::I64: return f(int64_t{});
    case DType::I32: return f(int32_t{});
    case DType::I16: return f(int16_t{});
    case DType::I8: return f(int8_t{});
    case DType::U8: case DType::Bool: return f(uint8_t{});
    case DType::F16: case DType::BF16: break;
  }
  SP_ASSERT(false, "visitDType: f16/bf16 must be widened first");
  return f(float{});
}

// Output element type of an elementwise op on dtype t, widened for halves.
inline DType computeType(DType t) { return isHalf(t) ? DType::F32 : t; }

// What the interpreter tells the kernel it runs on this thread (execNode
// installs it; evalOp and direct kernel calls run without one):
//  - a deadline: long kernels poll kernelInterrupted() between chunks and
//    skip the rest of their work once it has passed; the interpreter then
//    discards their output and reports the time limit;
//  - donated inputs: bit i set when in[i] was the last use of its value and
//    the interpreter handed its reference over, so an elementwise kernel may
//    write its output into in[i]'s storage (donatedOutput).
struct KernelContext {
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
  uint64_t donated = 0;
  bool interrupted = false;
};
// The calling thread's context (nullptr when none is installed).
KernelContext* currentKernelContext();
// Installs `ctx` for the calling thread for the scope's lifetime.
class KernelContextScope {
 public:
  explicit KernelContextScope(KernelContext* ctx);
  ~KernelContextScope();
  KernelContextScope(const KernelContextScope&) = delete;
  KernelContextScope& operator=(const KernelContextScope&) = delete;

 private:
  KernelContext* prev_;
};
// True once the calling thread's deadline has passed (and marks the kernel
// interrupted); false without a context. Reads the clock: poll per chunk of
// work, not per element.
bool kernelInterrupted();

// Deadline poll for a serial kernel loop: step(w) counts w units of work
// (elements touched) and reads the clock once per 2^16 units; true once the
// deadline has passed. The kernel then stops and its output is discarded.
class WorkPoll {
 public:
  bool step(int64_t work = 1) {
    done_ += work;
    if (done_ < kEvery) return false;
    done_ = 0;
    return kernelInterrupted();
  }

 private:
  static constexpr int64_t kEvery = int64_t(1) << 16;
  int64_t done_ = 0;
};

// Output storage for an elementwise kernel whose output element i depends
// only on element i of its same-shaped inputs: in[i]'s storage for the
// first candidate i that was donated, is referenced by nothing else (no
// view, no other value, no caller copy) and has the output's dtype and
// dims; else a new zero-filled tensor. Call it before copying in[i] (a
// kernel-local copy counts as another reference).
Tensor donatedOutput(std::span<const Tensor> in, std::initializer_list<size_t> candidates, DType dtype,
                     const std::vector<int64_t>& dims);

// Runs body(begin, end) over [0, n) split into contiguous chunks on a few
// threads when n is large; results must not depend on the split. Under a
// kernel context, n is covered in rounds of at most 512 * minPerThread per
// thread, with a deadline poll between rounds: an interrupted loop returns
// early and leaves the rest undone.
void parallelFor(int64_t n, const std::function<void(int64_t, int64_t)>& body,
                 int64_t minPerThread = int64_t(1) << 15);

// An output index space with, for each operand, the element stride of every
// dim (0 where the operand is broadcast). Dims are collapsed where all
// operands are contiguous across them, so the innermost run is long.
struct StridedPlan {
  std::vector<int64_t> dims;                  // collapsed output dims (rank >= 1)
  std::vector<std::vector<int64_t>> strides;  // [operand][dim]
  int64_t numel = 1;
};

// Plan for operands broadcast (numpy rules) to outDims.
StridedPlan broadcastPlan(const std::vector<int64_t>& outDims,
                          const std::vector<std::vector<int64_t>>& inDims);
// Plan from explicit strides per operand (transpose, slice, reductions).
StridedPlan stridedPlan(const std::vector<int64_t>& outDims,
                        std::vector<std::vector<int64_t>> strides);

// Visits output positions [begin, end) as runs along the innermost dim:
// f(outPos, offsets (per operand), len); operand k's element i of the run is
// at offsets[k] + i * plan.strides[k].back().
template <size_t N, typename F>
void forEachRun(const StridedPlan& p, int64_t begin, int64_t end, F&& f) {
  if (begin >= end) return;
  const size_t r = p.dims.size();
  std::vector<int64_t> idx(r, 0);
  std::array<int64_t, N> off{};
  int64_t rem = begin;
  for (size_t d = r; d-- > 0;) {
    idx[d] = rem % p.dims[d];
    rem /= p.dims[d];
    for (size_t k = 0; k < N; ++k) off[k] += idx[d] * p.strides[k][d];
  }
  int64_t pos = begin;
  while (pos < end) {
    int64_t len = std::min(p.dims[r - 1] - idx[r - 1], end - pos);
    f(pos, off, len);
    pos += len;
    if (pos >= end) break;
    // Advance by len along the last dim, then carry.
    idx[r - 1] += len;
    for (size_t k = 0; k < N; ++k) off[k] += len * p.strides[k][r - 1];
    for (size_t d = r - 1; d > 0 && idx[d] == p.dims[d]; --d) {
      for (size_t k = 0; k < N; ++k) off[k] += p.strides[k][d - 1] - p.dims[d] * p.strides[k][d];
      idx[d] = 0;
      ++idx[d - 1];
    }
  }
}

// Copies elements of `src` (any dtype) into a new tensor of outDims where
// operand 0 of the plan addresses src (byte-agnostic, by element size).
Tensor gatherStrided(const Tensor& src, const std::vector<int64_t>& outDims, const StridedPlan& p,
                     int64_t baseOffset = 0);
// src broadcast to dims (numpy rules; caller checked broadcastability).
Tensor broadcastTo(const Tensor& src, const std::vector<int64_t>& dims);

// Product of dims[from, to).
inline int64_t prodDims(const std::vector<int64_t>& d, size_t from, size_t to) {
  int64_t n = 1;
  for (size_t i = from; i < to; ++i) n *= d[i];
  return n;
}

}  // namespace sp::ir

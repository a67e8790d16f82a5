#include "cuda_ref/cuda_rank.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "cuda_ref/cuda_kernels.h"
#include "ir/interpreter_impl.h"

namespace sp::cuda_ref {

using codegen::PlanStep;
using codegen::StepKind;

DeviceRank::DeviceRank(const codegen::Plan& plan, int device, CommSet& comms, Abort& abort)
    : plan_(plan), order_(plan), device_(device), comms_(comms), abort_(abort), scratch_(size_t(plan.streams)) {}

DeviceRank::~DeviceRank() {
  cudaSetDevice(device_);
  for (cudaStream_t s : streams_) cudaStreamSynchronize(s);
  scratch_.clear();
  for (cudaEvent_t e : events_) cudaEventDestroy(e);
  for (cudaStream_t s : streams_) cudaStreamDestroy(s);
  if (blas_) cublasDestroy(blas_);
  if (badIndex_) cudaFree(badIndex_);
  if (arena_) cudaFree(arena_);
}

DevTensor DeviceRank::buffer(int b) const {
  const codegen::PlanBuffer& buf = plan_.buffers[size_t(b)];
  return {buf.type.dtype, dims_[size_t(b)], static_cast<char*>(arena_) + buf.offset};
}

Status DeviceRank::load(const ir::TensorMap& inputs) {
  SP_TRY(cudaCheck(cudaSetDevice(device_), "cudaSetDevice"));
  if (plan_.arenaBytes > 0)
    SP_TRY(cudaCheck(cudaMalloc(&arena_, size_t(plan_.arenaBytes)),
                     ("arena: cudaMalloc of " + std::to_string(plan_.arenaBytes) + " bytes").c_str()));
  SP_TRY(cudaCheck(cudaMalloc(reinterpret_cast<void**>(&badIndex_), sizeof(int64_t)), "cudaMalloc"));
  for (int s = 0; s < plan_.streams; ++s) {
    cudaStream_t st;
    SP_TRY(cudaCheck(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking), "cudaStreamCreate"));
    streams_.push_back(st);
    scratch_[size_t(s)].device = device_;
  }
  // One event per step (used by waits), then start, stop and one join per stream.
  for (size_t i = 0; i < plan_.steps.size() + 2 + size_t(plan_.streams); ++i) {
    cudaEvent_t e;
    bool timing = i == plan_.steps.size() || i == plan_.steps.size() + 1;
    SP_TRY(cudaCheck(cudaEventCreateWithFlags(&e, timing ? cudaEventDefault : cudaEventDisableTiming),
                     "cudaEventCreate"));
    events_.push_back(e);
  }
  SP_TRY(cublasCheck(cublasCreate(&blas_), "cublasCreate"));
  for (const codegen::PlanBuffer& b : plan_.buffers) {
    SP_ASSIGN(auto d, codegen::concreteDims(b.type, plan_.bindings));
    dims_.push_back(std::move(d));
  }
  for (size_t b = 0; b < plan_.buffers.size(); ++b) {
    const codegen::PlanBuffer& buf = plan_.buffers[b];
    if (buf.kind == codegen::BufferKind::Temp) continue;
    auto it = inputs.find(buf.name);
    SP_ASSERT(it != inputs.end(), "prepareInputs fills every input and param");
    const ir::Tensor& t = it->second;
    if (t.dtype() != buf.type.dtype || t.dims() != dims_[b])
      return makeError("exec-type-mismatch", "buffer " + buf.name + " is " +
                                                 ir::TensorType{buf.type.dtype, ir::shapeOf(dims_[b])}.str() +
                                                 " but the value is " + t.type().str());
    SP_TRY(cudaCheck(cudaMemcpy(buffer(int(b)).ptr, t.raw(), t.nbytes(), cudaMemcpyHostToDevice), "input copy"));
  }
  return okStatus();
}

Status DeviceRank::waitStreams() {
  for (cudaStream_t s : streams_) {
    while (true) {
      cudaError_t e = cudaStreamQuery(s);
      if (e == cudaSuccess) break;
      if (e != cudaErrorNotReady) return cudaCheck(e, "stream");
      if (abort_.failed) return abortedError();
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }
  return okStatus();
}

Status DeviceRank::hostKernel(const PlanStep& s, const ir::AttrMap& attrs) {
  cudaStream_t st = streams_[size_t(s.stream)];
  SP_TRY(cudaCheck(cudaStreamSynchronize(st), "host fallback: operands"));
  std::vector<ir::Tensor> in;
  for (int b : s.inputs) {
    DevTensor d = buffer(b);
    ir::Tensor t(d.dtype, d.dims);
    SP_TRY(cudaCheck(cudaMemcpy(t.mutableRaw(), d.ptr, t.nbytes(), cudaMemcpyDeviceToHost), "host fallback: copy in"));
    in.push_back(std::move(t));
  }
  SP_ASSIGN(auto out, ir::detail::runKernel(s.op, attrs, in));
  for (size_t k = 0; k < s.outputs.size(); ++k) {
    DevTensor d = buffer(s.outputs[k]);
    if (out[k].nbytes() != d.nbytes()) return makeError("exec-type-mismatch", "host kernel result " + out[k].type().str());
    SP_TRY(cudaCheck(cudaMemcpy(d.ptr, out[k].raw(), d.nbytes(), cudaMemcpyHostToDevice), "host fallback: copy out"));
  }
  if (!counted_) ++fallbacks_[std::string(ir::opName(s.op))];
  return okStatus();
}

Status DeviceRank::step(size_t i, bool& inGroup) {
  const PlanStep& s = plan_.steps[i];
  cudaStream_t st = streams_[size_t(s.stream)];
  switch (s.kind) {
    case StepKind::Wait:
      SP_TRY(cudaCheck(cudaEventRecord(events_[i], streams_[size_t(s.waitFor)]), "cudaEventRecord"));
      return cudaCheck(cudaStreamWaitEvent(st, events_[i]), "cudaStreamWaitEvent");
    case StepKind::Send:
    case StepKind::Recv: {
      DevTensor t = buffer(s.kind == StepKind::Send ? s.inputs[0] : s.outputs[0]);
      if (!comms_.isNccl(plan_.rank, s)) return comms_.p2p(plan_.rank, s, t, st, abort_);
      // A run of consecutive NCCL sends and recvs is one group.
      if (!inGroup) SP_TRY(ncclCheck(ncclGroupStart(), "ncclGroupStart"));
      inGroup = true;
      SP_TRY(comms_.p2p(plan_.rank, s, t, st, abort_));
      const PlanStep* next = i + 1 < plan_.steps.size() ? &plan_.steps[i + 1] : nullptr;
      if (next && (next->kind == StepKind::Send || next->kind == StepKind::Recv) && next->stream == s.stream &&
          comms_.isNccl(plan_.rank, *next))
        return okStatus();
      inGroup = false;
      return ncclCheck(ncclGroupEnd(), "ncclGroupEnd (send/recv)");
    }
    case StepKind::Collective:
      return comms_.collective(plan_.rank, s, buffer(s.inputs[0]), buffer(s.outputs[0]), st,
                               scratch_[size_t(s.stream)], abort_);
    case StepKind::Kernel: {
      SP_ASSIGN(ir::AttrMap attrs, ir::detail::bindAttrs(s.attrs, plan_.bindings));
      std::vector<DevTensor> in, out;
      for (int b : s.inputs) in.push_back(buffer(b));
      for (int b : s.outputs) out.push_back(buffer(b));
      KernelCtx ctx{st, blas_, badIndex_};
      SP_ASSIGN(bool onDevice, runDeviceKernel(s.op, attrs, in, out, ctx));
      if (onDevice) return okStatus();
      return hostKernel(s, attrs);
    }
  }
  return okStatus();
}

Status DeviceRank::run(bool timed) {
  SP_TRY(cudaCheck(cudaSetDevice(device_), "cudaSetDevice"));
  const size_t start = plan_.steps.size(), stop = start + 1, join = start + 2;
  if (timed) {
    SP_TRY(cudaCheck(cudaEventRecord(events_[start], streams_[0]), "cudaEventRecord"));
    for (size_t s = 1; s < streams_.size(); ++s)
      SP_TRY(cudaCheck(cudaStreamWaitEvent(streams_[s], events_[start]), "cudaStreamWaitEvent"));
  }
  bool inGroup = false;
  profile_ = std::getenv("SP_CUDA_PROFILE") != nullptr;
  profileMs_.clear();
  for (size_t i = 0; i < plan_.steps.size(); ++i) {
    if (abort_.failed) return abortedError();
    auto t0 = std::chrono::steady_clock::now();
    auto st = step(i, inGroup);
    if (profile_ && st && !inGroup) {
      SP_TRY(cudaCheck(cudaDeviceSynchronize(), "profile: cudaDeviceSynchronize"));
      const PlanStep& s = plan_.steps[i];
      std::string key = std::string(s.kind == StepKind::Wait ? "wait" : ir::opName(s.op));
      for (int o : s.outputs) {
        key += " [";
        for (size_t d = 0; d < dims_[size_t(o)].size(); ++d) key += (d ? "," : "") + std::to_string(dims_[size_t(o)][d]);
        key += "]";
      }
      auto& e = profileMs_[key];
      ++e.first;
      e.second += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    }
    if (!st) {
      if (inGroup) ncclGroupEnd();
      if (st.error().id == "aborted") return st;
      const PlanStep& s = plan_.steps[i];
      Error e = st.error();
      e.message = "rank " + std::to_string(plan_.rank) + ": " + plan_.stepWhere(i) + " (" +
                  std::string(s.kind == StepKind::Wait ? "wait" : ir::opName(s.op)) + " '" + s.name + "'): " + e.message;
      return e;
    }
  }
  if (timed) {
    for (size_t s = 1; s < streams_.size(); ++s) {
      SP_TRY(cudaCheck(cudaEventRecord(events_[join + s], streams_[s]), "cudaEventRecord"));
      SP_TRY(cudaCheck(cudaStreamWaitEvent(streams_[0], events_[join + s]), "cudaStreamWaitEvent"));
    }
    SP_TRY(cudaCheck(cudaEventRecord(events_[stop], streams_[0]), "cudaEventRecord"));
  }
  auto waited = waitStreams();
  if (!waited) {
    if (waited.error().id == "aborted") return waited;
    return makeError(waited.error().id, "rank " + std::to_string(plan_.rank) + ": " + waited.error().message);
  }
  if (timed) {
    float ms = 0;
    SP_TRY(cudaCheck(cudaEventElapsedTime(&ms, events_[start], events_[stop]), "cudaEventElapsedTime"));
    elapsedMs_ += ms;
  }
  counted_ = true;
  if (profile_) {
    std::vector<std::pair<double, std::string>> rows;
    double total = 0;
    for (const auto& [k, v] : profileMs_) {
      rows.emplace_back(v.second, k + " x" + std::to_string(v.first));
      total += v.second;
    }
    std::sort(rows.rbegin(), rows.rend());
    std::fprintf(stderr, "[profile] rank %lld: %.3f ms in %zu step kinds (steps synchronized)\n",
                 static_cast<long long>(plan_.rank), total, rows.size());
    for (size_t k = 0; k < rows.size() && k < 30; ++k)
      std::fprintf(stderr, "[profile]   %9.3f ms  %5.1f%%  %s\n", rows[k].first, 100 * rows[k].first / total,
                   rows[k].second.c_str());
  }
  return okStatus();
}

Result<ir::TensorMap> DeviceRank::outputs() {
  SP_TRY(cudaCheck(cudaSetDevice(device_), "cudaSetDevice"));
  ir::TensorMap out;
  for (int o : plan_.outputs) {
    DevTensor d = buffer(o);
    ir::Tensor t(d.dtype, d.dims);
    SP_TRY(cudaCheck(cudaMemcpy(t.mutableRaw(), d.ptr, t.nbytes(), cudaMemcpyDeviceToHost), "output copy"));
    out[plan_.buffers[size_t(o)].name] = std::move(t);
  }
  return out;
}

}  // namespace sp::cuda_ref

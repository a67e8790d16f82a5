#pragma once
// One rank of the CUDA backend: its arena, streams, events and cuBLAS
// handle on one device, and the loop that enqueues its plan's steps.
#include <map>
#include <vector>

#include "codegen/plan.h"
#include "codegen/step_order.h"
#include "cuda_ref/cuda_comm.h"
#include "ir/interpreter.h"

namespace sp::cuda_ref {

class DeviceRank {
 public:
  DeviceRank(const codegen::Plan& plan, int device, CommSet& comms, Abort& abort);
  ~DeviceRank();
  DeviceRank(const DeviceRank&) = delete;
  DeviceRank& operator=(const DeviceRank&) = delete;

  // Allocates the arena, streams, events and handles; copies inputs and
  // params (prepareInputs's) into the arena.
  Status load(const ir::TensorMap& inputs);
  // Enqueues every step once and waits for the streams; `timed` runs record
  // cudaEvents around the steps (elapsedMs adds their time).
  Status run(bool timed);
  double elapsedMs() const { return elapsedMs_; }
  Result<ir::TensorMap> outputs();
  // Kernel steps that ran on the host, by op, over the first run.
  const std::map<std::string, int64_t>& fallbacks() const { return fallbacks_; }

 private:
  DevTensor buffer(int b) const;
  Status step(size_t i, bool& inGroup);
  Status hostKernel(const codegen::PlanStep& s, const ir::AttrMap& attrs);
  Status waitStreams();

  const codegen::Plan& plan_;
  codegen::StepOrder order_;
  int device_;
  CommSet& comms_;
  Abort& abort_;
  std::vector<std::vector<int64_t>> dims_;
  void* arena_ = nullptr;
  int64_t* badIndex_ = nullptr;
  std::vector<cudaStream_t> streams_;
  std::vector<cudaEvent_t> events_;  // per step (waits), then start and stop
  std::vector<Scratch> scratch_;     // per stream
  cublasHandle_t blas_ = nullptr;
  std::map<std::string, int64_t> fallbacks_;
  // SP_CUDA_PROFILE set: every step synchronized and timed; after each run
  // the steps that took longest are printed on stderr (per op and shape).
  bool profile_ = false;
  std::map<std::string, std::pair<int64_t, double>> profileMs_;  // calls, ms
  bool counted_ = false;
  double elapsedMs_ = 0;
};

}  // namespace sp::cuda_ref

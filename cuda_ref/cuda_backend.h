#pragma once
// CUDA/NCCL backend of the reference executor (SHARDPROOF_CUDA builds
// only; docs/plan.md). Same contract as runPlansCpu: the plans passed
// checkPlans, inputs drawn from `program` the same way, ExecResult holds
// host tensors. Per rank: one cudaMalloc of plan.arenaBytes (buffers at
// their offsets), one CUDA stream per plan stream, waits as cudaEvents,
// steps enqueued in plan order by one host thread per rank. Kernels are
// device_ops/cuBLAS; a kernel step without a device kernel runs the
// interpreter's kernel on the host and is counted in
// ExecResult::hostFallbacks. Errors name the rank and plan step.
#include <string>

#include "cuda_ref/executor.h"

namespace sp::cuda_ref {

struct CudaOptions {
  ExecOptions exec;
  int warmup = 0;      // untimed runs of every step before the timed ones
  int iterations = 1;  // timed runs; ExecResult::seconds is their mean (cudaEvents, slowest rank)
};

// Visible CUDA devices; 0 when there is no device or no driver.
int cudaDevices();

// Single process: every rank in this process, rank r on device r % devices
// (on one GPU all ranks share it). Communicators whose members are on
// distinct GPUs are NCCL; members sharing a GPU meet in-process.
Result<ExecResult> runPlansCuda(const std::vector<codegen::Plan>& plans, const ir::Program& program,
                                const std::vector<ir::TensorMap>& given, const CudaOptions& opts = {});

// Distributed: one process per rank, launched as torchrun / SLURM do.
struct DistEnv {
  int64_t rank = 0, world = 1, localRank = 0;
  std::string masterAddr = "127.0.0.1";
  int port = 29500;
  double timeoutSeconds = 300;  // rendezvous (SP_RENDEZVOUS_TIMEOUT)
};
// From RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT (SLURM_PROCID,
// SLURM_NTASKS, SLURM_LOCALID when RANK is unset) and SP_RENDEZVOUS_TIMEOUT.
Result<DistEnv> distEnvFromEnvironment();

// Runs only plans[env.rank] on device env.localRank % devices; rank 0 hands
// out the NCCL ids over TCP on MASTER_ADDR:MASTER_PORT. outputs[r] is empty
// for every other rank.
Result<ExecResult> runPlanCudaDistributed(const std::vector<codegen::Plan>& plans, const ir::Program& program,
                                          const std::vector<ir::TensorMap>& given, const DistEnv& env,
                                          const CudaOptions& opts = {});

}  // namespace sp::cuda_ref

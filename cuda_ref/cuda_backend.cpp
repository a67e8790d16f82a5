// CUDA backend of the reference executor (cuda_backend.h): prepares inputs
// as the CPU backend does, then one DeviceRank per rank of this process.
#include "cuda_ref/cuda_backend.h"

#include <cstdlib>
#include <cstring>
#include <thread>

#include "cuda_ref/cuda_rank.h"
#include "cuda_ref/rendezvous.h"

namespace sp::cuda_ref {

namespace {

using codegen::Plan;

Result<ir::TensorMap> rankInputs(const std::vector<Plan>& plans, const ir::Program& program,
                                 const std::vector<ir::TensorMap>& given, size_t r, uint64_t seed) {
  static const ir::TensorMap kNone;
  ir::RunOptions ro;
  ro.seed = seed;
  ro.symbols = plans[r].bindings;
  auto in = ir::prepareInputs(program.rank(int64_t(r)), given.empty() ? kNone : given[r], ro);
  if (!in) return makeError(in.error().id, "rank " + std::to_string(r) + ": " + in.error().message, in.error().location);
  return in;
}

Status checkGiven(const std::vector<Plan>& plans, const ir::Program& program, const std::vector<ir::TensorMap>& given) {
  SP_ASSERT(int64_t(plans.size()) == program.worldSize(), "one plan per rank");
  if (!given.empty() && given.size() != plans.size())
    return makeError("bad-given", "inputs given for " + std::to_string(given.size()) + " ranks but the plans have " +
                                      std::to_string(plans.size()));
  return okStatus();
}

Result<int> deviceCountOrError() {
  int n = cudaDevices();
  if (n == 0) return makeError("no-cuda-device", "no CUDA device is visible (cudaGetDeviceCount found none)");
  return n;
}

// Runs the given ranks on their own threads: warmup, timed iterations, outputs.
Result<ExecResult> runRanks(std::vector<std::unique_ptr<DeviceRank>>& ranks, CommSet& comms, Abort& abort,
                            const CudaOptions& opts, size_t world, const std::vector<size_t>& rankIds) {
  std::vector<std::thread> threads;
  int runs = std::max(0, opts.warmup) + std::max(1, opts.iterations);
  for (auto& rr : ranks) {
    threads.emplace_back([&, rank = rr.get()] {
      for (int k = 0; k < runs && !abort.failed; ++k) {
        auto st = rank->run(k >= opts.warmup);
        if (!st && st.error().id != "aborted") abort.fail(st.error());
      }
    });
  }
  for (auto& t : threads) t.join();
  if (abort.error) {
    comms.abortNccl();
    return *abort.error;
  }
  ExecResult out;
  out.outputs.resize(world);
  double ms = 0;
  for (size_t k = 0; k < ranks.size(); ++k) {
    SP_ASSIGN(out.outputs[rankIds[k]], ranks[k]->outputs());
    ms = std::max(ms, ranks[k]->elapsedMs());
    for (const auto& [op, n] : ranks[k]->fallbacks()) out.hostFallbacks[op] += n;
  }
  out.seconds = ms / 1000.0 / std::max(1, opts.iterations);
  return out;
}

Result<int64_t> envInt(const char* name, const char* fallback, int64_t def) {
  const char* v = std::getenv(name);
  if (!v && fallback) v = std::getenv(fallback);
  if (!v) return def;
  char* end = nullptr;
  long long x = std::strtoll(v, &end, 10);
  if (!*v || *end) return makeError("bad-env", std::string(name) + "='" + v + "' is not an integer");
  return int64_t(x);
}

}  // namespace

int cudaDevices() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky "no device" error
    return 0;
  }
  return n;
}

Result<ExecResult> runPlansCuda(const std::vector<Plan>& plans, const ir::Program& program,
                                const std::vector<ir::TensorMap>& given, const CudaOptions& opts) {
  SP_TRY(checkGiven(plans, program, given));
  SP_ASSIGN(int devices, deviceCountOrError());
  std::vector<int> dev;
  for (size_t r = 0; r < plans.size(); ++r) dev.push_back(int(r % size_t(devices)));
  SP_ASSIGN(auto comms, CommSet::create(plans, dev));
  Abort abort;
  std::vector<std::unique_ptr<DeviceRank>> ranks;
  std::vector<size_t> ids;
  for (size_t r = 0; r < plans.size(); ++r) {
    SP_ASSIGN(ir::TensorMap in, rankInputs(plans, program, given, r, opts.exec.seed));
    ranks.push_back(std::make_unique<DeviceRank>(plans[r], dev[r], *comms, abort));
    auto st = ranks.back()->load(in);
    if (!st) return makeError(st.error().id, "rank " + std::to_string(r) + ": " + st.error().message);
    ids.push_back(r);
  }
  return runRanks(ranks, *comms, abort, opts, plans.size(), ids);
}

Result<DistEnv> distEnvFromEnvironment() {
  DistEnv e;
  SP_ASSIGN(e.rank, envInt("RANK", "SLURM_PROCID", -1));
  SP_ASSIGN(e.world, envInt("WORLD_SIZE", "SLURM_NTASKS", -1));
  SP_ASSIGN(e.localRank, envInt("LOCAL_RANK", "SLURM_LOCALID", 0));
  SP_ASSIGN(int64_t port, envInt("MASTER_PORT", nullptr, 29500));
  SP_ASSIGN(int64_t timeout, envInt("SP_RENDEZVOUS_TIMEOUT", nullptr, 300));
  if (e.rank < 0 || e.world < 1)
    return makeError("bad-env", "--ranks-per-process 1 needs RANK and WORLD_SIZE (or SLURM_PROCID and SLURM_NTASKS) "
                                "in the environment, as torchrun and srun set them");
  if (const char* a = std::getenv("MASTER_ADDR")) e.masterAddr = a;
  e.port = int(port);
  e.timeoutSeconds = double(timeout);
  return e;
}

Result<ExecResult> runPlanCudaDistributed(const std::vector<Plan>& plans, const ir::Program& program,
                                          const std::vector<ir::TensorMap>& given, const DistEnv& env,
                                          const CudaOptions& opts) {
  SP_TRY(checkGiven(plans, program, given));
  if (env.world != int64_t(plans.size()))
    return makeError("bad-env", "WORLD_SIZE is " + std::to_string(env.world) + " but the plans are for " +
                                    std::to_string(plans.size()) + " ranks");
  SP_ASSIGN(int devices, deviceCountOrError());
  int device = int(env.localRank % devices);
  auto keys = communicatorKeys(plans);
  std::string blob;
  if (env.rank == 0) {
    SP_TRY(cudaCheck(cudaSetDevice(device), "cudaSetDevice"));
    for (size_t k = 0; k < keys.size(); ++k) {
      ncclUniqueId id;
      SP_TRY(ncclCheck(ncclGetUniqueId(&id), "ncclGetUniqueId"));
      blob.append(id.internal, sizeof id.internal);
    }
  }
  auto shared = rendezvousShare({env.rank, env.world, env.masterAddr, env.port, env.timeoutSeconds}, blob);
  if (!shared) return shared.error();
  if (shared->size() != keys.size() * sizeof(ncclUniqueId))
    return makeError("rendezvous", "rank " + std::to_string(env.rank) + ": got " + std::to_string(shared->size()) +
                                       " bytes of NCCL ids for " + std::to_string(keys.size()) +
                                       " communicators (do all ranks read the same plans?)");
  std::vector<ncclUniqueId> ids(keys.size());
  for (size_t k = 0; k < keys.size(); ++k) std::memcpy(ids[k].internal, shared->data() + k * sizeof(ncclUniqueId), sizeof(ncclUniqueId));
  SP_ASSIGN(auto comms, CommSet::createDistributed(plans, env.rank, device, ids));
  Abort abort;
  size_t r = size_t(env.rank);
  SP_ASSIGN(ir::TensorMap in, rankInputs(plans, program, given, r, opts.exec.seed));
  std::vector<std::unique_ptr<DeviceRank>> ranks;
  ranks.push_back(std::make_unique<DeviceRank>(plans[r], device, *comms, abort));
  auto st = ranks.back()->load(in);
  if (!st) return makeError(st.error().id, "rank " + std::to_string(r) + ": " + st.error().message);
  return runRanks(ranks, *comms, abort, opts, plans.size(), {r});
}

}  // namespace sp::cuda_ref

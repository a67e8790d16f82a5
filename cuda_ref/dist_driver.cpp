// One rank of the distributed CUDA mode, for cuda_exec_test: lowers a text
// IR program to plans (codegen/lower.h), runs this process's rank as
// RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT say and writes its outputs to
// OUT/rRANK/NAME.npy. Exit 0 ok, 3 error (the message on stderr).
// Usage: cuda_dist_driver PROGRAM.sp OUT SEED
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "codegen/lower.h"
#include "cuda_ref/cuda_backend.h"
#include "ir/npy.h"
#include "ir/text.h"

namespace {

sp::Status runOne(const std::string& file, const std::string& out, uint64_t seed) {
  using namespace sp;
  std::ifstream in(file);
  std::stringstream text;
  text << in.rdbuf();
  SP_ASSIGN(ir::Program prog, ir::parseProgram(text.str(), file));
  SP_ASSIGN(auto plans, codegen::lowerProgram(prog, {}));
  SP_ASSIGN(ir::Program checked, codegen::checkPlans(plans));
  SP_ASSIGN(cuda_ref::DistEnv env, cuda_ref::distEnvFromEnvironment());
  cuda_ref::CudaOptions opts;
  opts.exec.seed = seed;
  SP_ASSIGN(auto res, cuda_ref::runPlanCudaDistributed(plans, checked, {}, env, opts));
  auto dir = std::filesystem::path(out) / ("r" + std::to_string(env.rank));
  std::filesystem::create_directories(dir);
  for (const auto& [name, t] : res.outputs[size_t(env.rank)]) SP_TRY(ir::writeNpy((dir / (name + ".npy")).string(), t));
  return okStatus();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: cuda_dist_driver PROGRAM.sp OUT SEED\n");
    return 3;
  }
  auto st = runOne(argv[1], argv[2], std::strtoull(argv[3], nullptr, 10));
  if (!st) {
    std::fprintf(stderr, "error: %s\n", st.error().str().c_str());
    return 3;
  }
  return 0;
}

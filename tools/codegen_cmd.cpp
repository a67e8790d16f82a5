// `shardproof codegen` and `shardproof exec`: thin glue over codegen/ and
// cuda_ref/.
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>

#include "codegen/codegen.h"
#include "codegen/plan_dir.h"
#include "cuda_ref/executor.h"
#ifdef SP_HAVE_CUDA
#include "cuda_ref/cuda_backend.h"
#endif
#include "tools/commands.h"
#include "tools/report.h"
#include "tools/verify_setup.h"

namespace sp::tools {

namespace {

int fail(const Error& e) {
  std::fprintf(stderr, "error: %s\n", e.str().c_str());
  return kExitBadInput;
}

Result<ir::Bindings> parseBinds(const std::vector<std::string>& binds) {
  ir::Bindings out;
  for (const auto& b : binds) {
    size_t eq = b.find('=');
    std::string name = b.substr(0, eq), value = eq == std::string::npos ? "" : b.substr(eq + 1);
    if (name.empty() || value.empty() || value.size() > 12 || value.find_first_not_of("0123456789") != std::string::npos)
      return makeError("bad-args", "--bind '" + b + "' is not NAME=VALUE with a non-negative integer VALUE");
    out[name] = std::stoll(value);
  }
  return out;
}

}  // namespace

int cmdCodegen(const CodegenArgs& a) {
  auto binds = parseBinds(a.binds);
  if (!binds) return fail(binds.error());
  auto setup = setupVerify(a.verify);
  if (!setup) return fail(setup.error());
  codegen::CodegenOptions opts;
  opts.verify = setup->opts;
  opts.bindings = *binds;
  auto gen = codegen::generatePlans(setup->seq, setup->dist, setup->rel, opts);
  if (!gen) {
    if (gen.error().id == "codegen-self-check") {
      std::fprintf(stderr, "error: %s\nnothing written\n", gen.error().str().c_str());
      return kExitRefuted;
    }
    return fail(gen.error());
  }
  noteConstants(*setup, gen->report);
  std::cout << reportText(gen->report);
  if (gen->report.verdict != rewrite::Verdict::Verified) {
    std::fprintf(stderr, "codegen: D is %s, not verified: no plan written\n",
                 std::string(rewrite::verdictName(gen->report.verdict)).c_str());
    return kExitRefuted;
  }
  if (gen->plans.empty()) {
    std::fprintf(stderr, "codegen: the plans read back are %s against S, not verified: nothing written\n%s",
                 std::string(rewrite::verdictName(gen->readBack->verdict)).c_str(), reportText(*gen->readBack).c_str());
    return kExitRefuted;
  }
  codegen::ManifestInfo info{a.verify.seq, a.verify.dist, "verified", a.verify.outputs};
  if (auto st = codegen::writePlanDir(a.outDir, gen->plans, info); !st) return fail(st.error());
  std::cout << "plans: " << gen->plans.size() << " ranks written to " << a.outDir
            << " (read back, checked and verified against S again)\n";
  for (const auto& p : gen->plans) {
    int64_t sum = 0;
    for (const auto& b : p.buffers) sum += b.bytes;
    std::cout << "  r" << p.rank << ".plan: " << p.steps.size() << " steps, " << p.buffers.size() << " buffers, arena "
              << p.arenaBytes << " bytes (" << sum << " without reuse)\n";
  }
  return kExitOk;
}

namespace {

#ifndef SP_HAVE_CUDA
Error noCudaBuild() {
  return makeError("bad-args", "--backend cuda: shardproof was built without SHARDPROOF_CUDA "
                               "(configure with -DSHARDPROOF_CUDA=ON)");
}
#endif

// The CUDA backend, when built: single process or this process's rank.
Result<cuda_ref::ExecResult> runCuda(const ExecArgs& a, const std::vector<codegen::Plan>& plans,
                                     const ir::Program& prog, const std::vector<ir::TensorMap>& given,
                                     const cuda_ref::ExecOptions& opts) {
#ifdef SP_HAVE_CUDA
  if (cuda_ref::cudaDevices() == 0)
    return makeError("no-cuda-device", "--backend cuda: no CUDA device is visible");
  cuda_ref::CudaOptions co;
  co.exec = opts;
  if (a.ranksPerProcess == "all") return cuda_ref::runPlansCuda(plans, prog, given, co);
  SP_ASSIGN(cuda_ref::DistEnv env, cuda_ref::distEnvFromEnvironment());
  return cuda_ref::runPlanCudaDistributed(plans, prog, given, env, co);
#else
  return noCudaBuild();
#endif
}

// Distributed: this process wrote its rank only (the others' maps are empty).
Status writeOwnOutputs(const std::string& dir, const std::vector<ir::TensorMap>& outs) {
  for (size_t r = 0; r < outs.size(); ++r)
    if (!outs[r].empty()) return writeOutputs((std::filesystem::path(dir) / ("r" + std::to_string(r))).string(), outs[r]);
  return okStatus();
}

}  // namespace

int cmdExec(const ExecArgs& a) {
  bool cuda = a.backend == "cuda";
  if (!cuda && a.backend != "cpu") return fail(makeError("bad-args", "--backend " + a.backend + ": cpu or cuda"));
  if (!cuda && a.ranksPerProcess != "all")
    return fail(makeError("bad-args", "--ranks-per-process " + a.ranksPerProcess + " needs --backend cuda"));
#ifndef SP_HAVE_CUDA
  if (cuda) return fail(noCudaBuild());  // before reading anything: this build cannot run it
#endif
  auto plans = codegen::readPlanDir(a.planDir);
  if (!plans) return fail(plans.error());
  auto prog = codegen::checkPlans(*plans);
  if (!prog) return fail(prog.error());
  auto given = programInputs(*prog, a.inputs);
  if (!given) return fail(given.error());
  cuda_ref::ExecOptions opts;
  opts.seed = a.seed;
  auto run = cuda ? runCuda(a, *plans, *prog, *given, opts) : cuda_ref::runPlansCpu(*plans, *prog, *given, opts);
  if (!run) return fail(run.error());
  bool oneRank = cuda && a.ranksPerProcess == "1";
  if (auto st = oneRank ? writeOwnOutputs(a.outDir, run->outputs) : writeRankOutputs(a.outDir, run->outputs); !st)
    return fail(st.error());
  std::fprintf(stderr, "ran %zu of %zu ranks on %s in %.3f s\n", oneRank ? size_t(1) : plans->size(), plans->size(),
               a.backend.c_str(), run->seconds);
  for (const auto& [op, n] : run->hostFallbacks)
    std::fprintf(stderr, "host fallback: %s x%lld (no device kernel: ran the interpreter's kernel on the host)\n",
                 op.c_str(), static_cast<long long>(n));
  return kExitOk;
}

}  // namespace sp::tools

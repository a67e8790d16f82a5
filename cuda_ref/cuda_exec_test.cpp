// The CUDA backend against the CPU backend (which equals the interpreter bit
// for bit) on the same plans and inputs. Plans come from codegen/lower.h
// (no verifier): every tests/verify dist.sp and examples/*.sp program, and
// TP programs in f32, f16 and bf16 using every collective. Tolerances
// (|got - want| <= atol + rtol |want|, elementwise; NaN where NaN):
//   f32  rtol 1e-4, atol 1e-5  (cuBLAS and NCCL sum in another order)
//   f16  rtol 1e-2, atol 1e-3  (one rounding of a differently ordered sum)
//   bf16 rtol 4e-2, atol 1e-2
//   f64, integers, bool: exact up to rtol 1e-12
// Every test skips when no CUDA device is visible. Label: gpu.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "codegen/lower.h"
#include "cuda_ref/cuda_backend.h"
#include "ir/npy.h"
#include "ir/text.h"

namespace sp::cuda_ref {
namespace {

namespace fs = std::filesystem;

// The sources and the driver where the build put them, unless the
// environment says otherwise (the GPU bundle's run.sh does).
fs::path sourceDir() {
  const char* e = std::getenv("SP_SOURCE_DIR");
  return e ? fs::path(e) : fs::path(SP_SOURCE_DIR);
}
std::string driverPath() {
  const char* e = std::getenv("SP_DIST_DRIVER");
  return e ? std::string(e) : std::string(SP_DIST_DRIVER);
}

#define SP_NEED_GPU() \
  if (cudaDevices() == 0) GTEST_SKIP() << "no CUDA device visible"

std::string readFile(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

struct Tol {
  double rtol, atol;
};
Tol tolerance(ir::DType t) {
  switch (t) {
    case ir::DType::F32: return {1e-4, 1e-5};
    case ir::DType::F16: return {1e-2, 1e-3};
    case ir::DType::BF16: return {4e-2, 1e-2};
    default: return {1e-12, 0};
  }
}

void expectClose(const ir::Tensor& got, const ir::Tensor& want, const std::string& what) {
  ASSERT_EQ(got.type(), want.type()) << what;
  Tol tol = tolerance(want.dtype());
  int64_t bad = 0, first = -1;
  for (int64_t i = 0; i < want.numel(); ++i) {
    double g = got.getAsDouble(i), w = want.getAsDouble(i);
    bool ok = (std::isnan(g) && std::isnan(w)) || g == w || std::fabs(g - w) <= tol.atol + tol.rtol * std::fabs(w);
    if (!ok && bad++ == 0) first = i;
  }
  EXPECT_EQ(bad, 0) << what << ": " << bad << " of " << want.numel() << " elements differ beyond rtol " << tol.rtol
                    << " atol " << tol.atol << "; first at " << first << ": cuda "
                    << (first >= 0 ? got.getAsDouble(first) : 0) << " cpu " << (first >= 0 ? want.getAsDouble(first) : 0);
}

struct Lowered {
  std::vector<codegen::Plan> plans;
  ir::Program program;
};

Result<Lowered> lower(const ir::Program& p) {
  SP_ASSIGN(auto plans, codegen::lowerProgram(p, codegen::bindProgramSymbols(p, {})));
  SP_ASSIGN(ir::Program checked, codegen::checkPlans(plans));
  return Lowered{std::move(plans), std::move(checked)};
}

// CUDA (single process) and CPU on the same plans; every output compared.
void compareBackends(const ir::Program& p, const std::string& what, uint64_t seed) {
  auto low = lower(p);
  ASSERT_TRUE(low.ok()) << what << ": " << low.error().str();
  ExecOptions eo;
  eo.seed = seed;
  auto want = runPlansCpu(low->plans, low->program, {}, eo);
  ASSERT_TRUE(want.ok()) << what << ": " << want.error().str();
  CudaOptions co;
  co.exec = eo;
  auto got = runPlansCuda(low->plans, low->program, {}, co);
  ASSERT_TRUE(got.ok()) << what << ": " << got.error().str();
  std::string fb;
  for (const auto& [op, n] : got->hostFallbacks) fb += " " + op + " x" + std::to_string(n);
  std::printf("[cuda] %-40s host fallbacks:%s\n", what.c_str(), fb.empty() ? " none" : fb.c_str());
  ASSERT_EQ(got->outputs.size(), want->outputs.size());
  for (size_t r = 0; r < want->outputs.size(); ++r)
    for (const auto& [name, t] : want->outputs[r]) {
      auto it = got->outputs[r].find(name);
      ASSERT_NE(it, got->outputs[r].end()) << what << " rank " << r << " lacks " << name;
      expectClose(it->second, t, what + " rank " + std::to_string(r) + " output " + name);
    }
}

std::vector<fs::path> programFiles() {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(sourceDir() / "tests" / "verify"))
    if (fs::exists(e.path() / "dist.sp")) out.push_back(e.path() / "dist.sp");
  for (const auto& e : fs::directory_iterator(sourceDir() / "examples"))
    if (e.path().extension() == ".sp" && readFile(e.path()).find("program ") != std::string::npos) out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

class CudaPrograms : public ::testing::TestWithParam<fs::path> {};

TEST_P(CudaPrograms, MatchTheCpuBackend) {
  SP_NEED_GPU();
  auto prog = ir::parseProgram(readFile(GetParam()), GetParam().string());
  ASSERT_TRUE(prog.ok()) << prog.error().str();
  std::string what = GetParam().parent_path().filename().string() + "/" + GetParam().filename().string();
  for (uint64_t seed : {1, 2}) compareBackends(*prog, what + " seed " + std::to_string(seed), seed);
}

INSTANTIATE_TEST_SUITE_P(Programs, CudaPrograms, ::testing::ValuesIn(programFiles()), [](const auto& info) {
  std::string n = info.param.parent_path().filename().string() + "_" + info.param.stem().string();
  for (char& c : n) c = std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return n;
});

// TP 2 over every collective: a row-parallel MLP (all_reduce), all_gather
// and reduce_scatter on dim 1 (non-leading: packed around NCCL), all_to_all,
// broadcast, and a send/recv pair; norms, softmax and layout ops.
std::string tpProgram(const std::string& dt) {
  auto T = [&](const std::string& dims) { return dt + "[" + dims + "]"; };
  std::string common = R"(
    input %x: X48
    param %w1: X86
    param %w2: X68
    param %g: X8
    param %g4: X4
    %n: X48 = rms_norm(%x, %g)
    %h: X46 = matmul(%n, %w1)
    %a: X46 = silu(%h)
    %p: X48 = matmul(%a, %w2)
    %s: X48 = all_reduce(%p) {group = "tp"}
    %ag: X416 = all_gather(%s) {group = "tp", dim = 1}
    %rs: X48 = reduce_scatter(%ag) {group = "tp", dim = 1}
    %mx: X48 = all_reduce(%rs) {group = "tp", reduce = "max"}
    %at: X84 = all_to_all(%mx) {group = "tp", split_dim = 1, concat_dim = 0}
    %bc: X84 = broadcast(%at) {group = "tp", root = 1}
    %sm: X84 = softmax(%bc)
    %t: X48 = transpose(%sm) {perm = [1, 0]}
    %ln: X48 = layer_norm(%t, %g, %g)
    %sl: X42 = slice(%ln) {starts = [0], ends = [2], axes = [1]}
    %cat: X410 = concat(%sl, %ln) {axis = 1}
    %rsum: X4 = reduce_sum(%cat) {axes = [1], keepdims = 0}
    %q: X4 = mul(%rsum, %g4)
)";
  std::string text = "program tp_all_" + dt + " {\n  world 2\n  mesh [tp = 2]\n  rank 0 {" + common +
                     "    send(%cat) {peer = 1}\n    output %q\n  }\n  rank 1 {" + common +
                     "    %r: X410 = recv() {peer = 0, dtype = " + dt + ", shape = [4, 10]}\n" +
                     "    %y: X410 = add(%r, %cat)\n    output %y\n    output %q\n  }\n}\n";
  // longer keys first: X4 is a prefix of X48
  const std::pair<const char*, const char*> shapes[] = {{"X416", "4, 16"}, {"X410", "4, 10"}, {"X48", "4, 8"},
                                                         {"X46", "4, 6"},   {"X42", "4, 2"},   {"X86", "8, 6"},
                                                         {"X84", "8, 4"},   {"X68", "6, 8"},   {"X8", "8"},
                                                         {"X4", "4"}};
  for (auto [k, v] : shapes)
    for (size_t at; (at = text.find(k)) != std::string::npos;) text.replace(at, std::strlen(k), T(v));
  return text;
}

class CudaTp : public ::testing::TestWithParam<std::string> {};

TEST_P(CudaTp, EveryCollectiveMatchesTheCpuBackend) {
  SP_NEED_GPU();
  auto prog = ir::parseProgram(tpProgram(GetParam()), "tp.sp");
  ASSERT_TRUE(prog.ok()) << prog.error().str();
  compareBackends(*prog, "tp_all " + GetParam(), 3);
}

INSTANTIATE_TEST_SUITE_P(DTypes, CudaTp, ::testing::Values("f32", "f16", "bf16"));

// Attention's masked softmax: -inf fill (the online max-and-sum must not
// turn -inf - -inf into NaN), rows longer than a block (300 > 256 threads:
// a thread's running sum is rescaled when its max grows), a broadcast mask
// and a scalar fill (the vector path of where), a scalar scale (the vector
// path of mul).
class CudaMaskedSoftmax : public ::testing::TestWithParam<std::string> {};

TEST_P(CudaMaskedSoftmax, MatchesTheCpuBackend) {
  SP_NEED_GPU();
  const std::string& dt = GetParam();
  std::string text = "program causal_" + dt + " {\n  world 1\n  rank 0 {\n"
                     "    input %s: " + dt + "[4, 300, 304]\n"
                     "    input %m: bool[300, 304]\n"
                     "    %c: " + dt + "[] = constant() {value = dense<" + dt + "[], [0.125]>}\n"
                     "    %ninf: " + dt + "[] = constant() {value = dense<" + dt + "[], [-inf]>}\n"
                     "    %sc: " + dt + "[4, 300, 304] = mul(%s, %c)\n"
                     "    %w: " + dt + "[4, 300, 304] = where(%m, %sc, %ninf)\n"
                     "    %p: " + dt + "[4, 300, 304] = softmax(%w)\n"
                     "    output %p\n  }\n}\n";
  auto prog = ir::parseProgram(text, "causal.sp");
  ASSERT_TRUE(prog.ok()) << prog.error().str();
  compareBackends(*prog, "masked softmax " + dt, 3);
}

INSTANTIATE_TEST_SUITE_P(DTypes, CudaMaskedSoftmax, ::testing::Values("f32", "f16", "bf16"));

TEST(CudaErrors, GatherOnTheDeviceAndAnIndexOutOfRangeNamesTheRankAndStep) {
  SP_NEED_GPU();
  auto prog = ir::parseProgram(R"(program g {
  world 1
  rank 0 {
    input %idx: i64[2]
    param %t: f32[4, 3]
    %g: f32[2, 3] = gather(%t, %idx)
    output %g
  }
}
)", "g.sp");
  ASSERT_TRUE(prog.ok());
  auto low = lower(*prog);
  ASSERT_TRUE(low.ok()) << low.error().str();
  std::vector<ir::TensorMap> given(1);
  ir::Tensor bad(ir::DType::I64, {2});
  bad.mutableData<int64_t>()[1] = 9;
  given[0]["idx"] = bad;
  auto run = runPlansCuda(low->plans, low->program, given);
  ASSERT_FALSE(run.ok());
  ir::Tensor good(ir::DType::I64, {2});
  good.mutableData<int64_t>()[0] = 3;
  good.mutableData<int64_t>()[1] = -1;
  std::vector<ir::TensorMap> fine(1);
  fine[0]["idx"] = good;
  auto ok = runPlansCuda(low->plans, low->program, fine);
  auto cpu = runPlansCpu(low->plans, low->program, fine);
  ASSERT_TRUE(ok.ok() && cpu.ok()) << (ok.ok() ? cpu.error().str() : ok.error().str());
  EXPECT_TRUE(ok->hostFallbacks.empty()) << "gather runs on the device";
  expectClose(ok->outputs[0].at("g"), cpu->outputs[0].at("g"), "gather");
  EXPECT_NE(run.error().str().find("rank 0: rank 0 step 0 (gather 'g'): "), std::string::npos) << run.error().str();
  EXPECT_NE(run.error().str().find("index 9 is out of range for dim 4"), std::string::npos) << run.error().str();
}

// The distributed mode: WORLD_SIZE driver processes (fork/exec) meeting over
// the TCP rendezvous, each writing its own rank's outputs. NCCL refuses two
// ranks of one communicator on one GPU, so with one GPU the program has no
// communication (the launch, rendezvous and per-process outputs are still
// tested); with two or more it is the TP program.
TEST(CudaDistributed, ProcessesPerRankMatchTheCpuBackend) {
  SP_NEED_GPU();
  bool comm = cudaDevices() >= 2;
  std::string text = comm ? tpProgram("f32") : R"(program solo {
  world 2
  mesh [dp = 2]
  rank 0..1 {
    input %x: f32[4, 8]
    param %w: f32[8, 8]
    %h: f32[4, 8] = matmul(%x, %w)
    %y: f32[4, 8] = tanh(%h)
    output %y
  }
}
)";
  fs::path dir = fs::temp_directory_path() / ("sp-cuda-dist-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "p.sp") << text;
  std::string port = std::to_string(20000 + ::getpid() % 20000);
  std::vector<pid_t> kids;
  for (int r = 0; r < 2; ++r) {
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      ::setenv("RANK", std::to_string(r).c_str(), 1);
      ::setenv("LOCAL_RANK", std::to_string(r).c_str(), 1);
      ::setenv("WORLD_SIZE", "2", 1);
      ::setenv("MASTER_ADDR", "127.0.0.1", 1);
      ::setenv("MASTER_PORT", port.c_str(), 1);
      ::setenv("SP_RENDEZVOUS_TIMEOUT", "60", 1);
      std::string driver = driverPath();
      ::execl(driver.c_str(), driver.c_str(), (dir / "p.sp").c_str(), dir.c_str(), "5", nullptr);
      ::_exit(127);
    }
    kids.push_back(pid);
  }
  for (pid_t k : kids) {
    int status = 0;
    ::waitpid(k, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "driver exit status " << status;
  }
  auto prog = ir::parseProgram(text, "p.sp");
  ASSERT_TRUE(prog.ok());
  auto low = lower(*prog);
  ASSERT_TRUE(low.ok());
  ExecOptions eo;
  eo.seed = 5;
  auto want = runPlansCpu(low->plans, low->program, {}, eo);
  ASSERT_TRUE(want.ok()) << want.error().str();
  for (size_t r = 0; r < want->outputs.size(); ++r)
    for (const auto& [name, t] : want->outputs[r]) {
      auto got = ir::readNpy((dir / ("r" + std::to_string(r)) / (name + ".npy")).string());
      ASSERT_TRUE(got.ok()) << got.error().str();
      expectClose(*got, t, "distributed rank " + std::to_string(r) + " output " + name);
    }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace sp::cuda_ref

// CPU executor against the interpreter on the same program, as CSV:
//   model,tp,layers,tokens,hidden,ffn,interp_seconds,exec_seconds,exec_over_interp,
//   arena_mb_per_rank,buffers_mb_per_rank,identical
// The program is a stack of tensor-parallel GELU MLP blocks (column- then
// row-parallel, all_reduce, residual) at TP 1..8, written as text IR and
// lowered to plans (codegen/lower.h; not verified here: the benchmark times
// execution). Times are the median of --runs runs (default 3), inputs
// drawn once outside the timing for the executor, inside it for the
// interpreter (runProgram draws its own; a few ms at these sizes).
// Usage: bench_exec [--runs N] [--tp 1,2,4,8] [--layers 4] [--tokens 512] [--hidden 1024]
//        bench_exec --cuda 1 [--tp 1,2,4,8] [--seq 8192] [--warmup 2] [--iters 5]
// --cuda 1 (SHARDPROOF_CUDA builds) prints the CUDA cells instead
// (bench_exec_cuda.cpp: a Llama-3-8B layer in bf16 at TP 1..8, NCCL
// all_reduce bus bandwidth).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "codegen/lower.h"
#include "cuda_ref/executor.h"
#include "ir/text.h"

namespace {

std::string mlpProgram(int tp, int layers, int tokens, int hidden, int ffn) {
  auto d = [](int v) { return std::to_string(v); };
  std::string t = "f32[" + d(tokens) + ", " + d(hidden) + "]", f = "f32[" + d(tokens) + ", " + d(ffn / tp) + "]";
  std::string s = "program mlp_tp" + d(tp) + " {\n  world " + d(tp) + "\n  mesh [tp = " + d(tp) + "]\n  rank 0.." +
                  d(tp - 1) + " {\n    input %x_0: " + t + "\n";
  for (int l = 0; l < layers; ++l) {
    std::string L = d(l);
    s += "    param %w1_" + L + ": f32[" + d(hidden) + ", " + d(ffn / tp) + "]\n";
    s += "    param %w2_" + L + ": f32[" + d(ffn / tp) + ", " + d(hidden) + "]\n";
    s += "    %h_" + L + ": " + f + " = matmul(%x_" + L + ", %w1_" + L + ")\n";
    s += "    %g_" + L + ": " + f + " = gelu(%h_" + L + ")\n";
    s += "    %p_" + L + ": " + t + " = matmul(%g_" + L + ", %w2_" + L + ")\n";
    s += "    %o_" + L + ": " + t + " = all_reduce(%p_" + L + ") {group = \"tp\"}\n";
    s += "    %x_" + d(l + 1) + ": " + t + " = add(%x_" + L + ", %o_" + L + ")\n";
  }
  return s + "    output %x_" + d(layers) + "\n  }\n}\n";
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

std::vector<int> intList(const char* s) {
  std::vector<int> out;
  for (const char* p = s; *p;) {
    out.push_back(std::atoi(p));
    const char* c = std::strchr(p, ',');
    if (!c) break;
    p = c + 1;
  }
  return out;
}

}  // namespace

#ifdef SP_HAVE_CUDA
int benchCuda(const std::vector<int>& tps, int64_t seq, int warmup, int iters);
#endif

int main(int argc, char** argv) {
  using namespace sp;
  int runs = 3, layers = 4, tokens = 512, hidden = 1024, cuda = 0, seq = 8192, warmup = 2, iters = 5;
  std::vector<int> tps = {1, 2, 4, 8};
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--runs") runs = std::max(1, std::atoi(argv[i + 1]));
    else if (a == "--tp") tps = intList(argv[i + 1]);
    else if (a == "--layers") layers = std::atoi(argv[i + 1]);
    else if (a == "--tokens") tokens = std::atoi(argv[i + 1]);
    else if (a == "--hidden") hidden = std::atoi(argv[i + 1]);
    else if (a == "--cuda") cuda = std::atoi(argv[i + 1]);
    else if (a == "--seq") seq = std::atoi(argv[i + 1]);
    else if (a == "--warmup") warmup = std::atoi(argv[i + 1]);
    else if (a == "--iters") iters = std::max(1, std::atoi(argv[i + 1]));
    else {
      std::fprintf(stderr, "usage: bench_exec [--runs N] [--tp 1,2,4,8] [--layers L] [--tokens T] [--hidden H]\n"
                           "       bench_exec --cuda 1 [--tp 1,2,4,8] [--seq S] [--warmup W] [--iters I]\n");
      return 3;
    }
  }
  if (cuda) {
#ifdef SP_HAVE_CUDA
    return benchCuda(tps, seq, warmup, iters);
#else
    std::fprintf(stderr, "bench_exec: built without SHARDPROOF_CUDA: no cuda cells\n");
    return 3;
#endif
  }
  int ffn = 4 * hidden;
  std::printf("model,tp,layers,tokens,hidden,ffn,interp_seconds,exec_seconds,exec_over_interp,arena_mb_per_rank,"
              "buffers_mb_per_rank,identical\n");
  for (int tp : tps) {
    if (tp < 1 || ffn % tp != 0) continue;
    auto prog = ir::parseProgram(mlpProgram(tp, layers, tokens, hidden, ffn), "bench.sp");
    if (!prog) {
      std::fprintf(stderr, "error: %s\n", prog.error().str().c_str());
      return 3;
    }
    auto plans = codegen::lowerProgram(*prog, {});
    if (!plans) {
      std::fprintf(stderr, "error: %s\n", plans.error().str().c_str());
      return 3;
    }
    auto checked = codegen::checkPlans(*plans);
    if (!checked) {
      std::fprintf(stderr, "error: %s\n", checked.error().str().c_str());
      return 3;
    }
    std::vector<double> ti, te;
    bool identical = true;
    for (int r = 0; r < runs; ++r) {
      ir::RunOptions ro;
      ro.seed = 1;
      auto t0 = std::chrono::steady_clock::now();
      auto want = ir::runProgram(*prog, {}, ro);
      ti.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      cuda_ref::ExecOptions eo;
      eo.seed = 1;
      auto got = cuda_ref::runPlansCpu(*plans, *checked, {}, eo);
      if (!want || !got) {
        std::fprintf(stderr, "error: %s\n", (!want ? want.error() : got.error()).str().c_str());
        return 3;
      }
      te.push_back(got->seconds);
      for (size_t k = 0; k < want->size(); ++k)
        for (const auto& [n, t] : (*want)[k]) identical = identical && got->outputs[k].at(n).identical(t);
    }
    int64_t sum = 0;
    for (const auto& b : (*plans)[0].buffers) sum += b.bytes;
    double mi = median(ti), me = median(te);
    std::printf("mlp,%d,%d,%d,%d,%d,%.4f,%.4f,%.2f,%.1f,%.1f,%s\n", tp, layers, tokens, hidden, ffn, mi, me, me / mi,
                double((*plans)[0].arenaBytes) / 1e6, double(sum) / 1e6, identical ? "yes" : "no");
    std::fflush(stdout);
  }
  return 0;
}

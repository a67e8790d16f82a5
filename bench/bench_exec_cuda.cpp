// CUDA cells of bench_exec (SHARDPROOF_CUDA builds), CSV:
//   cell,tp,seq,dtype,ranks_per_gpu,ms,tflops,bytes,algbw_gbs,busbw_gbs,host_fallbacks,note
// (a) a Llama-3-8B decoder layer forward (hidden 4096, 32 heads, 8 KV
//     heads, head dim 128, ffn 14336, RMSNorm, rotary (rotate-half, cos/sin
//     inputs), SiLU-gated MLP, causal attention in the IR's unfused form:
//     matmul, mask by where(row >= col), softmax, matmul) in bf16, batch 1,
//     one rank; tflops counts the full T x T score and AV matmuls the
//     unfused form computes, plus the projections and MLP.
// (b) the same layer at TP 2/4/8 (Megatron: heads, KV heads and ffn split,
//     all_reduce after the attention and MLP output projections); ranks
//     sharing a GPU are marked shared-gpu, and their collectives are the
//     in-process device communicator, not NCCL.
// (c) all_reduce bus bandwidth as nccl-tests define it: algbw = bytes /
//     time, busbw = algbw * 2 (n - 1) / n, f32 sum, 1 MiB .. 1 GiB, for n =
//     2, 4, 8 ranks that fit one per visible GPU.
// Times: cudaEvents around the steps of each rank (slowest rank), mean of
// `iters` runs after `warmup` runs; inputs drawn and copied once, outside.
#include <cstdio>
#include <string>
#include <vector>

#include "codegen/lower.h"
#include "cuda_ref/cuda_backend.h"
#include "ir/text.h"

namespace {

using sp::Result;

std::string S(int64_t v) { return std::to_string(v); }

// One rank body of the Llama layer at TP tp (every rank has the same shapes).
std::string llamaLayer(int tp, int64_t T) {
  const int64_t H = 4096, nh = 32 / tp, nkv = 8 / tp, hd = 128, F = 14336 / tp, grp = 32 / 8;
  const int64_t Hq = nh * hd, Hk = nkv * hd;
  auto b = [](const std::string& dims) { return "bf16[" + dims + "]"; };
  std::string s = "program llama3_8b_layer_tp" + S(tp) + " {\n  world " + S(tp) + "\n  mesh [tp = " + S(tp) +
                  "]\n  rank 0.." + S(tp - 1) + " {\n";
  auto line = [&](const std::string& l) { s += "    " + l + "\n"; };
  auto reduce = [&](const std::string& in, const std::string& out) {  // the name holding the sum
    if (tp == 1) return in;
    line("%" + out + ": " + b(S(T) + ", " + S(H)) + " = all_reduce(%" + in + ") {group = \"tp\"}");
    return out;
  };
  std::string TH = b(S(T) + ", " + S(H));
  line("input %x: " + TH);
  line("input %cos: " + b(S(T) + ", 1, " + S(hd)));
  line("input %sin: " + b(S(T) + ", 1, " + S(hd)));
  for (auto [n, d] : {std::pair{"g1", S(H)}, {"g2", S(H)}, {"wq", S(H) + ", " + S(Hq)}, {"wk", S(H) + ", " + S(Hk)},
                      {"wv", S(H) + ", " + S(Hk)}, {"wo", S(Hq) + ", " + S(H)}, {"wg", S(H) + ", " + S(F)},
                      {"wu", S(H) + ", " + S(F)}, {"wd", S(F) + ", " + S(H)}})
    line(std::string("param %") + n + ": " + b(d));
  line("%n1: " + TH + " = rms_norm(%x, %g1) {epsilon = 1e-5}");
  line("%q: " + b(S(T) + ", " + S(Hq)) + " = matmul(%n1, %wq)");
  line("%k: " + b(S(T) + ", " + S(Hk)) + " = matmul(%n1, %wk)");
  line("%v: " + b(S(T) + ", " + S(Hk)) + " = matmul(%n1, %wv)");
  for (auto [n, heads] : {std::pair{"q", nh}, {"k", nkv}, {"v", nkv}})
    line(std::string("%") + n + "4: " + b(S(T) + ", " + S(heads) + ", " + S(hd)) + " = reshape(%" + n +
         ") {shape = [" + S(T) + ", " + S(heads) + ", " + S(hd) + "]}");
  for (auto [n, heads] : {std::pair{"q", nh}, {"k", nkv}}) {  // rotate-half RoPE
    std::string N = n, full = b(S(T) + ", " + S(heads) + ", " + S(hd)), half = b(S(T) + ", " + S(heads) + ", " + S(hd / 2));
    line("%" + N + "c: " + full + " = mul(%" + N + "4, %cos)");
    line("%" + N + "1: " + half + " = slice(%" + N + "4) {starts = [0], ends = [" + S(hd / 2) + "], axes = [2]}");
    line("%" + N + "2: " + half + " = slice(%" + N + "4) {starts = [" + S(hd / 2) + "], ends = [" + S(hd) + "], axes = [2]}");
    line("%" + N + "n: " + half + " = neg(%" + N + "2)");
    line("%" + N + "rh: " + full + " = concat(%" + N + "n, %" + N + "1) {axis = 2}");
    line("%" + N + "s: " + full + " = mul(%" + N + "rh, %sin)");
    line("%" + N + "r: " + full + " = add(%" + N + "c, %" + N + "s)");
  }
  for (auto [n, src] : {std::pair{"k", "kr"}, {"v", "v4"}}) {  // GQA: each KV head for its query heads
    std::string N = n;
    line("%" + N + "5: " + b(S(T) + ", " + S(nkv) + ", 1, " + S(hd)) + " = unsqueeze(%" + src + ") {axes = [2]}");
    line("%" + N + "e: " + b(S(T) + ", " + S(nkv) + ", " + S(grp) + ", " + S(hd)) + " = expand(%" + N + "5) {shape = [" +
         S(T) + ", " + S(nkv) + ", " + S(grp) + ", " + S(hd) + "]}");
    line("%" + N + "g: " + b(S(T) + ", " + S(nh) + ", " + S(hd)) + " = reshape(%" + N + "e) {shape = [" + S(T) + ", " +
         S(nh) + ", " + S(hd) + "]}");
  }
  std::string NTD = b(S(nh) + ", " + S(T) + ", " + S(hd)), NTT = b(S(nh) + ", " + S(T) + ", " + S(T));
  line("%qh: " + NTD + " = transpose(%qr) {perm = [1, 0, 2]}");
  line("%kt: " + b(S(nh) + ", " + S(hd) + ", " + S(T)) + " = transpose(%kg) {perm = [1, 2, 0]}");
  line("%vh: " + NTD + " = transpose(%vg) {perm = [1, 0, 2]}");
  line("%sc: " + NTT + " = matmul(%qh, %kt)");
  line("%scale: bf16[] = constant() {value = dense<bf16[], [0.08838834764831845]>}");
  line("%ss: " + NTT + " = mul(%sc, %scale)");
  line("%pos: f32[" + S(T) + "] = range() {start = 0, limit = " + S(T) + ", dtype = f32}");
  line("%row: f32[" + S(T) + ", 1] = reshape(%pos) {shape = [" + S(T) + ", 1]}");
  line("%col: f32[1, " + S(T) + "] = reshape(%pos) {shape = [1, " + S(T) + "]}");
  line("%causal: bool[" + S(T) + ", " + S(T) + "] = ge(%row, %col)");
  line("%neginf: bf16[] = constant() {value = dense<bf16[], [-1e30]>}");
  line("%sm: " + NTT + " = where(%causal, %ss, %neginf)");
  line("%pr: " + NTT + " = softmax(%sm)");
  line("%a: " + NTD + " = matmul(%pr, %vh)");
  line("%at: " + b(S(T) + ", " + S(nh) + ", " + S(hd)) + " = transpose(%a) {perm = [1, 0, 2]}");
  line("%a2: " + b(S(T) + ", " + S(Hq)) + " = reshape(%at) {shape = [" + S(T) + ", " + S(Hq) + "]}");
  line("%op: " + TH + " = matmul(%a2, %wo)");
  std::string o = reduce("op", "o");
  line("%r1: " + TH + " = add(%x, %" + o + ")");
  line("%n2: " + TH + " = rms_norm(%r1, %g2) {epsilon = 1e-5}");
  std::string TF = b(S(T) + ", " + S(F));
  line("%gate: " + TF + " = matmul(%n2, %wg)");
  line("%up: " + TF + " = matmul(%n2, %wu)");
  line("%sg: " + TF + " = silu(%gate)");
  line("%hm: " + TF + " = mul(%sg, %up)");
  line("%dp: " + TH + " = matmul(%hm, %wd)");
  std::string d = reduce("dp", "d");
  line("%y: " + TH + " = add(%r1, %" + d + ")");
  line("output %y");
  return s + "  }\n}\n";
}

std::string allReduceProgram(int n, int64_t elems) {
  std::string t = "f32[" + S(elems) + "]";
  return "program all_reduce_" + S(n) + " {\n  world " + S(n) + "\n  mesh [tp = " + S(n) + "]\n  rank 0.." + S(n - 1) +
         " {\n    input %x: " + t + "\n    %y: " + t + " = all_reduce(%x) {group = \"tp\"}\n    output %y\n  }\n}\n";
}

Result<sp::cuda_ref::ExecResult> timeProgram(const std::string& text, int warmup, int iters) {
  using namespace sp;
  SP_ASSIGN(ir::Program prog, ir::parseProgram(text, "bench.sp"));
  SP_ASSIGN(auto plans, codegen::lowerProgram(prog, {}));
  SP_ASSIGN(ir::Program checked, codegen::checkPlans(plans));
  cuda_ref::CudaOptions o;
  o.exec.seed = 1;
  o.warmup = warmup;
  o.iterations = iters;
  return cuda_ref::runPlansCuda(plans, checked, {}, o);
}

std::string fallbacks(const sp::cuda_ref::ExecResult& r) {
  std::string s;
  for (const auto& [op, n] : r.hostFallbacks) s += (s.empty() ? "" : " ") + op + "x" + S(n);
  return s.empty() ? "none" : s;
}

}  // namespace

// Returns 0, or 3 on an error (printed).
int benchCuda(const std::vector<int>& tps, int64_t seq, int warmup, int iters) {
  int gpus = sp::cuda_ref::cudaDevices();
  if (gpus == 0) {
    std::fprintf(stderr, "bench_exec: no CUDA device visible, no cuda cells\n");
    return 0;
  }
  std::printf("cell,tp,seq,dtype,ranks_per_gpu,ms,tflops,bytes,algbw_gbs,busbw_gbs,host_fallbacks,note\n");
  const double H = 4096, Hq = 4096, Hk = 1024, F = 14336, T = double(seq), nh = 32, hd = 128;
  const double flops = 2 * T * (H * Hq + 2 * H * Hk + Hq * H + 3 * H * F) + 2 * 2 * nh * T * T * hd;
  for (int tp : tps) {
    if (tp < 1 || 8 % tp != 0) continue;
    auto r = timeProgram(llamaLayer(tp, seq), warmup, iters);
    if (!r) {
      std::fprintf(stderr, "error: llama tp %d: %s\n", tp, r.error().str().c_str());
      return 3;
    }
    int perGpu = (tp + gpus - 1) / gpus;
    double ms = r->seconds * 1e3;
    std::printf("llama3_8b_layer,%d,%lld,bf16,%d,%.3f,%.1f,,,,%s,%s\n", tp, static_cast<long long>(seq), perGpu, ms,
                flops / (r->seconds * 1e12), fallbacks(*r).c_str(),
                perGpu > 1 ? "shared-gpu: ranks share a GPU; tflops is the whole layer over the slowest rank" : "");
    std::fflush(stdout);
  }
  for (int n : {2, 4, 8}) {
    if (n > gpus) break;
    for (int64_t bytes = int64_t(1) << 20; bytes <= int64_t(1) << 30; bytes *= 4) {
      auto r = timeProgram(allReduceProgram(n, bytes / 4), 2, 10);
      if (!r) {
        std::fprintf(stderr, "error: all_reduce %d ranks: %s\n", n, r.error().str().c_str());
        return 3;
      }
      double alg = double(bytes) / r->seconds / 1e9, bus = alg * 2.0 * (n - 1) / n;
      std::printf("all_reduce,%d,,f32,1,%.4f,,%lld,%.2f,%.2f,%s,nccl\n", n, r->seconds * 1e3,
                  static_cast<long long>(bytes), alg, bus, fallbacks(*r).c_str());
      std::fflush(stdout);
    }
  }
  return 0;
}

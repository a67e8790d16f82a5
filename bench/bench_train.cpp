// Whole-model training steps from `parallelize --backward` (issue 16: the
// planner's Llama 3 405B layout, forward + backward at full size, verified in
// <= 30 s and <= 2 GiB). Each cell runs in a child process (its own peak RSS):
// generate S and D (forward, autodiff of S and every rank), then verify the
// texts as `parallelize --verify` does.
// Usage: bench_train [--model llama3-405b] [--plans "tp=8,pp=16;tp=8,pp=16,dp=2;tp=8,cp=2"]
//                    [--seq 8192] [--layers 0 (the config's)] [--micro-batches 1] [--forward]
// Prints CSV:
// model,tp,sp,cp,dp,ep,pp,vpp,micro_batches,layers,seq,step,verdict,generate_s,verify_s,peak_rss_mb,seq_ops,dist_ops,reason
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "planner/parallelize.h"
#include "rewrite/verify/verify.h"

namespace {

using sp::planner::Layout;

double since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t at = 0;
  while (at <= s.size()) {
    size_t e = s.find(sep, at);
    if (e == std::string::npos) e = s.size();
    if (e > at) out.push_back(s.substr(at, e - at));
    at = e + 1;
  }
  return out;
}

int cell(const sp::planner::ModelConfig& cfg, const std::string& plan, int64_t seq, int64_t layers, bool backward,
         int microBatches) {
  auto fix = sp::planner::parseFix(plan);
  if (!fix) {
    std::fprintf(stderr, "bench_train: %s\n", fix.error().str().c_str());
    return 3;
  }
  Layout l;
  l.tp = fix->tp.value_or(1);
  l.pp = fix->pp.value_or(1);
  l.vpp = fix->vpp.value_or(1);
  l.ep = fix->ep.value_or(1);
  l.cp = fix->cp.value_or(1);
  l.sequenceParallel = l.tp > 1;  // (as parallelize's auto)
  auto spec = sp::planner::specFromConfig(cfg, l, seq, 1, layers);
  if (!spec) {
    std::fprintf(stderr, "bench_train: %s\n", spec.error().str().c_str());
    return 3;
  }
  spec->dp = int(fix->dp.value_or(fix->ep.value_or(1)));  // ep without dp: dp = ep
  spec->backward = backward;
  spec->microBatches = microBatches;
  auto t0 = std::chrono::steady_clock::now();
  auto prog = sp::planner::parallelize(*spec);
  double gen = since(t0);
  if (!prog) {
    std::fprintf(stderr, "bench_train: %s\n", prog.error().str().c_str());
    return 3;
  }
  auto t1 = std::chrono::steady_clock::now();
  sp::rewrite::VerifyOptions o;
  o.timeLimitSeconds = 600;
  auto rep = sp::rewrite::verifyTexts(prog->seq, prog->dist, prog->relations, o);
  double ver = since(t1);
  struct rusage ru {};
  getrusage(RUSAGE_SELF, &ru);
  std::string verdict = rep ? std::string(sp::rewrite::verdictName(rep->verdict)) : "error";
  std::string reason = rep ? rep->reason : rep.error().str();
  for (char& ch : reason)
    if (ch == '"' || ch == '\n') ch = '\'';
  std::printf("%s,%d,%d,%d,%d,%d,%d,%d,%d,%d,%lld,%s,%s,%.2f,%.2f,%.0f,%lld,%lld,\"%s\"\n", cfg.name.c_str(), spec->tp,
              int(spec->sequenceParallel), spec->cp, spec->dp, spec->ep, spec->pp, spec->vpp, spec->microBatches, spec->layers, (long long)seq,
              backward ? "fwd+bwd" : "fwd", verdict.c_str(), gen, ver, double(ru.ru_maxrss) / 1024.0,
              rep ? (long long)rep->stats.seqOps : 0LL, rep ? (long long)rep->stats.distOps : 0LL,
              reason.substr(0, 200).c_str());
  std::fflush(stdout);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string model = "llama3-405b", plans = "tp=8,pp=16;tp=8,pp=16,dp=2";
  long long seq = 8192, layers = 0, microBatches = 1;
  bool backward = true;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--model") model = next();
    else if (a == "--plans") plans = next();
    else if (a == "--seq") seq = std::atoll(next().c_str());
    else if (a == "--layers") layers = std::atoll(next().c_str());
    else if (a == "--forward") backward = false;
    else if (a == "--micro-batches") microBatches = std::atoll(next().c_str());
    else {
      std::fprintf(stderr,
                   "usage: bench_train [--model NAME (planner/configs)] [--plans \"tp=8,pp=16;...\"] [--seq N] "
                   "[--layers N] [--micro-batches M] [--forward]\n");
      return 2;
    }
  }
  std::string path = model.find('/') != std::string::npos ? model
                                                          : std::string(SP_SOURCE_DIR) + "/planner/configs/" + model + ".json";
  auto cfg = sp::planner::loadModelConfig(path);
  if (!cfg) {
    std::fprintf(stderr, "bench_train: %s\n", cfg.error().str().c_str());
    return 3;
  }
  std::printf("model,tp,sp,cp,dp,ep,pp,vpp,micro_batches,layers,seq,step,verdict,generate_s,verify_s,peak_rss_mb,seq_ops,dist_ops,reason\n");
  std::fflush(stdout);
  int rc = 0;
  for (const std::string& plan : split(plans, ';')) {
    pid_t pid = fork();
    if (pid == 0) _exit(cell(*cfg, plan, seq, layers, backward, int(microBatches)));
    int status = 0;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      std::fprintf(stderr, "bench_train: cell %s failed\n", plan.c_str());
      rc = 1;
    }
  }
  return rc;
}

#include "planner/search.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <tuple>

namespace sp::planner {

namespace {

std::vector<int64_t> divisors(int64_t n) {
  std::vector<int64_t> d;
  for (int64_t i = 1; i * i <= n; ++i)
    if (n % i == 0) {
      d.push_back(i);
      if (i != n / i) d.push_back(n / i);
    }
  std::sort(d.begin(), d.end());
  return d;
}

template <typename T>
std::vector<T> choices(const std::optional<T>& fixed, std::vector<T> all) {
  if (fixed) return {*fixed};
  return all;
}

std::string fmtGib(double x) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f", x);
  return b;
}

}  // namespace

Result<PlanResult> searchPlans(const PlanRequest& req) {
  auto start = std::chrono::steady_clock::now();
  const ModelConfig& m = req.model;
  const Job& job = req.job;
  const FixedChoices& fix = req.fix;
  if (job.gpus <= 0 || job.seq <= 0 || job.globalBatch <= 0)
    return makeError("plan-input", "gpus, seq and global batch must be positive");
  ModelCounts mc = countModel(m);
  PlanResult res;
  std::map<std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t>, Plan> best;
  auto tally = [&](const std::string& id, const std::string& msg) {
    auto& t = res.ruledOut[id];
    if (t.count++ == 0) t.example = msg;
  };
  std::vector<int64_t> tps;
  for (int64_t t : divisors(job.gpus)) tps.push_back(t);
  if (fix.tp) tps = {*fix.tp};
  std::vector<int64_t> eps = {1};
  if (m.moe()) eps = divisors(m.experts);
  std::vector<Recompute> recs =
      choices(fix.recompute, {Recompute::None, Recompute::Selective, Recompute::Full});
  std::vector<bool> dos = choices(fix.distributedOptimizer, {true, false});
  std::vector<int64_t> mbs = choices(fix.microBatch, {1, 2, 4, 8, 16});
  for (int64_t tp : tps) {
    if (tp > req.gpu.gpusPerNode && !fix.tp) {
      tally("tp-node", "tp " + std::to_string(tp) + " exceeds the " + std::to_string(req.gpu.gpusPerNode) +
                           " GPUs of a node (tensor parallel stays on NVLink)");
      continue;
    }
    std::vector<int64_t> pps = fix.pp ? std::vector<int64_t>{*fix.pp}
                                      : divisors(job.gpus % tp == 0 ? job.gpus / tp : 1);
    for (int64_t pp : pps) {
      if (!fix.pp && pp > m.layers + 2) continue;
      int64_t rest = tp * pp <= job.gpus && job.gpus % (tp * pp) == 0 ? job.gpus / (tp * pp) : 1;
      std::vector<int64_t> cps = fix.cp ? std::vector<int64_t>{*fix.cp} : divisors(rest);
      for (int64_t cp : cps) {
        if (!fix.cp && cp > 1 && job.seq % (2 * cp) != 0) {
          tally("seq-cp", "sequence length " + std::to_string(job.seq) + " is not divisible by 2 x cp " +
                              std::to_string(cp) + " = " + std::to_string(2 * cp));
          continue;
        }
        int64_t dp = fix.dp ? *fix.dp : std::max<int64_t>(1, job.gpus / (tp * pp * cp));
        std::vector<int64_t> epc = fix.ep ? std::vector<int64_t>{*fix.ep} : eps;
        for (int64_t ep : epc) {
          std::vector<int64_t> etps = {tp};
          if (m.moe() && ep > 1 && tp > 1) etps.push_back(1);
          if (fix.etp) etps = {*fix.etp};
          for (int64_t etp : etps) {
            std::vector<PipeSplit> splits = {PipeSplit::Even};
            if (fix.split) splits = {*fix.split};
            else if (pp > 1 && !splitDivides(m, PipeSplit::Even, pp, 1))
              splits = {splitDivides(m, PipeSplit::EmbeddingLoss, pp, 1) || !splitDivides(m, PipeSplit::Uneven, pp, 1)
                            ? PipeSplit::EmbeddingLoss
                            : PipeSplit::Uneven};
            for (PipeSplit split : splits) {
              int64_t first = 0, last = 0;
              if (split == PipeSplit::Uneven) unevenSplit(m.layers, pp, first, last);
              int64_t slots = pp == 1 || split == PipeSplit::Uneven
                                  ? 1
                                  : (m.layers + (split == PipeSplit::EmbeddingLoss ? 2 : 0)) / pp;
              std::vector<int64_t> vpps = fix.vpp ? std::vector<int64_t>{*fix.vpp} : divisors(std::max<int64_t>(1, slots));
              for (int64_t vpp : vpps) {
                if (!fix.vpp && vpp > 1 && pp == 1) continue;
                for (int64_t mb : mbs) {
                  Layout l;
                  l.tp = tp, l.pp = pp, l.vpp = vpp, l.cp = cp, l.ep = ep, l.etp = etp, l.dp = dp;
                  l.microBatch = mb, l.split = split, l.sequenceParallel = true;
                  l.firstLayers = first, l.lastLayers = last;
                  auto broken = checkStructure(m, l, job, /*all=*/false);
                  if (!broken.empty()) {
                    tally(broken[0].id, broken[0].message);
                    continue;
                  }
                  for (Recompute rc : recs) {
                    for (bool d : dos) {
                      l.recompute = rc;
                      l.distributedOptimizer = d;
                      Estimate e = estimate(mc, req.gpu, l, job);
                      if (!e.fits) {
                        char msg[256];
                        std::snprintf(msg, sizeof msg,
                                      "tp %lld pp %lld vpp %lld cp %lld ep %lld dp %lld mb %lld recompute %s "
                                      "distopt %d: stage %d needs %s GiB of %s GiB",
                                      (long long)tp, (long long)pp, (long long)vpp, (long long)cp, (long long)ep,
                                      (long long)dp, (long long)mb, recomputeName(rc), int(d), e.heaviestStage,
                                      fmtGib(e.memory.totalGib).c_str(), fmtGib(req.gpu.memoryGib).c_str());
                        tally("memory", msg);
                        continue;
                      }
                      ++res.feasible;
                      auto key = std::make_tuple(tp, pp, cp, ep, dp);
                      auto it = best.find(key);
                      if (it == best.end() || e.stepSeconds < it->second.estimate.stepSeconds)
                        best[key] = Plan{l, e};
                    }
                  }
                }
              }
            }
          }
        }
      }
    }
  }
  res.candidates = res.feasible;
  for (const auto& [_, t] : res.ruledOut) res.candidates += t.count;
  res.layouts = int64_t(best.size());
  for (auto& [_, p] : best) res.plans.push_back(p);
  std::sort(res.plans.begin(), res.plans.end(), [](const Plan& a, const Plan& b) {
    if (a.estimate.stepSeconds != b.estimate.stepSeconds) return a.estimate.stepSeconds < b.estimate.stepSeconds;
    return a.estimate.memory.totalGib < b.estimate.memory.totalGib;
  });
  if (req.top > 0 && int64_t(res.plans.size()) > req.top) res.plans.resize(req.top);
  res.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return res;
}

}  // namespace sp::planner

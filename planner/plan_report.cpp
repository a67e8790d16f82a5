#include "planner/plan_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

namespace sp::planner {

namespace {

std::string fmt(const char* f, double x) {
  char b[64];
  std::snprintf(b, sizeof b, f, x);
  return b;
}

std::string layoutLine(const Layout& l) {
  char b[256];
  std::snprintf(b, sizeof b, "tp %lld pp %lld vpp %lld cp %lld ep %lld etp %lld dp %lld mb %lld recompute %s distopt %s split %s",
                (long long)l.tp, (long long)l.pp, (long long)l.vpp, (long long)l.cp, (long long)l.ep,
                (long long)l.etp, (long long)l.dp, (long long)l.microBatch, recomputeName(l.recompute),
                l.distributedOptimizer ? "on" : "off", pipeSplitName(l.split));
  std::string s = b;
  if (l.split == PipeSplit::Uneven)
    s += " (first " + std::to_string(l.firstLayers) + ", last " + std::to_string(l.lastLayers) + " layers)";
  return s;
}

}  // namespace

std::string planText(const PlanRequest& req, const PlanResult& res) {
  ModelCounts mc = countModel(req.model);
  std::string out = "model " + req.model.name + ": " + fmt("%.1f", mc.totalParams() / 1e9) + "B parameters (" +
                    fmt("%.1f", mc.activeParams() / 1e9) + "B active), " +
                    fmt("%.3g", mc.flopsPerToken(req.job.seq)) + " training FLOPs per token at seq " +
                    std::to_string(req.job.seq) + "\n";
  out += "job: " + std::to_string(req.job.gpus) + " x " + req.gpu.kind + ", global batch " +
         std::to_string(req.job.globalBatch) + " sequences of " + std::to_string(req.job.seq) + " tokens\n";
  out += "searched " + std::to_string(res.candidates) + " candidates, " + std::to_string(res.feasible) +
         " fit (" + std::to_string(res.layouts) + " distinct tp/pp/cp/ep/dp) in " + fmt("%.2f", res.seconds) + " s\n";
  int rank = 0;
  for (const Plan& p : res.plans) {
    const Estimate& e = p.estimate;
    const TimeBreakdown& t = e.time;
    double m = double(e.microBatches);
    out += "\n#" + std::to_string(++rank) + " " + layoutLine(p.layout) + "\n";
    out += "   step " + fmt("%.3f", e.stepSeconds) + " s, " + fmt("%.0f", e.tflopsPerGpu) + " TFLOPs/GPU, MFU " +
           fmt("%.1f", 100 * e.mfu) + "%, " + std::to_string(e.microBatches) + " micro-batches\n";
    out += "   time: compute " + fmt("%.3f", m * t.compute) + " s, tp " + fmt("%.3f", m * t.tpComm) + " s, cp " +
           fmt("%.3f", m * t.cpComm) + " s, ep " + fmt("%.3f", m * t.epComm) + " s, bubble " + fmt("%.3f", t.bubble) +
           " s, pp p2p " + fmt("%.3f", t.ppComm) + " s, dp " + fmt("%.3f", t.dpComm) + " s, optimizer " +
           fmt("%.3f", t.optimizer) + " s\n";
    const MemoryBreakdown& mem = e.memory;
    const double G = double(1ll << 30);
    out += "   memory (stage " + std::to_string(e.heaviestStage) + "): " + fmt("%.1f", mem.totalGib) + " GiB of " +
           fmt("%.1f", req.gpu.memoryGib) + " = weights " + fmt("%.1f", mem.weights / G) + " + grads " +
           fmt("%.1f", mem.grads / G) + " + optimizer " + fmt("%.1f", mem.optimizer / G) + " + activations " +
           fmt("%.1f", mem.activations / G) + " + logits " + fmt("%.1f", mem.logits / G) + ", x" +
           fmt("%.2f", 1 + kFragmentation) + " fragmentation + " + fmt("%.1f", kReserveGib) + " reserved\n";
  }
  if (res.plans.empty()) out += "\n" + ruledOutText(res);
  out += "\nassumes: bf16 weights, fp32 main grads and Adam state (Megatron), flash attention, sequence parallel when "
         "tp > 1, efficiencies of planner/gpus.json (docs/planner.md)\n";
  return out;
}

std::string planJson(const PlanResult& res) {
  nlohmann::ordered_json j;
  j["plans"] = nlohmann::ordered_json::array();
  for (const Plan& p : res.plans) {
    const Layout& l = p.layout;
    const Estimate& e = p.estimate;
    auto r3 = [](double x) { return std::round(x * 1000) / 1000; };
    j["plans"].push_back({{"tp", l.tp},
                          {"pp", l.pp},
                          {"vpp", l.vpp},
                          {"cp", l.cp},
                          {"ep", l.ep},
                          {"dp", l.dp},
                          {"micro_batch", l.microBatch},
                          {"recompute", recomputeName(l.recompute)},
                          {"distributed_optimizer", l.distributedOptimizer},
                          {"memory_gib_per_gpu", r3(e.memory.totalGib)},
                          {"step_seconds", r3(e.stepSeconds)},
                          {"tflops_per_gpu", r3(e.tflopsPerGpu)},
                          {"mfu", std::round(e.mfu * 10000) / 10000}});
  }
  return j.dump(2) + "\n";
}

std::string ruledOutText(const PlanResult& res) {
  std::vector<std::pair<std::string, RuleTally>> v(res.ruledOut.begin(), res.ruledOut.end());
  std::stable_sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.second.count > b.second.count; });
  std::string out = "no layout fits: " + std::to_string(res.candidates) + " candidates ruled out, by the first rule each broke\n";
  for (const auto& [id, t] : v)
    out += "  " + id + ": " + std::to_string(t.count) + " (e.g. " + t.example + ")\n";
  return out;
}

}  // namespace sp::planner

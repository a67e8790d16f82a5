#include "planner/cost.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace sp::planner {

namespace {

struct Link {
  double bytesPerS = 0, latency = 0;
};

Link nvlink(const GpuSpec& g) { return {g.nvlinkGBs * 1e9 * g.nvlinkEff, kNvlinkLatencyS}; }
Link ib(const GpuSpec& g) { return {g.ibGBs * 1e9 * g.ibEff, kIbLatencyS}; }
// A group whose ranks span more GPUs than a node holds talks over InfiniBand.
Link linkFor(const GpuSpec& g, int64_t span) { return span > g.gpusPerNode ? ib(g) : nvlink(g); }

// Ring all-gather or reduce-scatter of `bytes` (the full, gathered size) over
// n ranks; an all-to-all moves the same (n-1)/n share.
double ringTime(double bytes, int64_t n, Link link) {
  if (n <= 1) return 0;
  double k = double(n - 1);
  return k / double(n) * bytes / link.bytesPerS + k * link.latency;
}

struct LayerTime {
  double compute = 0;  // GEMMs, attention, memory-bound ops: forward + backward + recompute
  double tp = 0, cp = 0, ep = 0;  // exposed communication
  double fwd = 0, bwd = 0;        // totals, for overlap windows
};

LayerTime layerTime(const ModelConfig& c, const LayerCounts& lc, bool moeLayer, const GpuSpec& g,
                    const Layout& l, const Job& job) {
  double tokens = double(l.microBatch) * double(job.seq) / double(l.cp);  // per CP rank
  double tp = double(l.tp);
  double peak = g.peakTflops * 1e12;
  double gemmF = 2 * lc.activeMatmul * tokens / tp / (peak * g.gemmEff);
  double attnF = lc.attnCore / 3 * double(job.seq) * tokens / tp / (peak * g.attnEff);
  bool sp = l.sequenceParallel && l.tp > 1;
  double h = double(c.hidden);
  double replicated = sp || l.tp == 1 ? 0 : 8 * h;  // norms and residuals without SP
  double elemF = (lc.actBytes / tp + replicated) * tokens / (g.hbmTBs * 1e12 * g.hbmEff);
  double tpColl = ringTime(tokens * h * 2, l.tp, linkFor(g, l.tp));
  double cpF = 0, cpB = 0;
  if (l.cp > 1) {
    double kvDim = c.mla() ? double(c.heads) * double(c.headDim + c.vHeadDim)
                           : double(c.kvHeads) * double(c.headDim + c.vHeadDim);
    double kvBytes = tokens * kvDim * 2 / tp;
    Link link = linkFor(g, l.tp * l.cp);
    double ring = double(l.cp - 1) * (kvBytes / link.bytesPerS + link.latency);
    cpF = std::max(0.0, ring - attnF);                            // overlapped with attention
    cpB = std::max(0.0, 2 * ring - kFlashBackwardRatio * attnF);  // K,V and their gradients
  }
  double epOne = 0;
  if (moeLayer && l.ep > 1)
    epOne = ringTime(tokens / tp * double(c.topK) * h * 2, l.ep, linkFor(g, l.etp * l.ep));
  // Forward: 2 all-gathers + 2 reduce-scatters exposed (no userbuffer
  // overlap). Backward: the input re-gathers overlap the dgrad GEMMs and the
  // grad reduce-scatters the wgrad GEMMs (Megatron's default), the two
  // row-parallel grad all-gathers are exposed.
  LayerTime t;
  double fwdCompute = gemmF + attnF + elemF;
  double bwdCompute = 2 * gemmF + kFlashBackwardRatio * attnF + 2 * elemF;
  t.fwd = fwdCompute + 4 * tpColl + cpF + 2 * epOne;
  t.bwd = bwdCompute + 2 * tpColl + cpB + 2 * epOne;
  t.compute = fwdCompute + bwdCompute;
  t.tp = 6 * tpColl;
  t.cp = cpF + cpB;
  t.ep = 4 * epOne;
  if (l.recompute == Recompute::Full) {
    t.compute += fwdCompute;
    t.tp += 4 * tpColl;
    t.cp += cpF;
    t.ep += 2 * epOne;
    t.bwd += t.fwd;
  } else if (l.recompute == Recompute::Selective) {
    t.compute += attnF;
    t.bwd += attnF;
  }
  return t;
}

// Activation bytes of one layer for one micro-batch, as stored for backward.
double layerActBytes(const ModelConfig& c, const LayerCounts& lc, const Layout& l, const Job& job,
                     bool forceFull) {
  double tokens = double(l.microBatch) * double(job.seq) / double(l.cp);
  double tp = double(l.tp), h = double(c.hidden);
  bool sp = l.sequenceParallel && l.tp > 1;
  if (l.recompute == Recompute::Full && !forceFull) return 2 * h * tokens / (sp ? tp : 1);
  double replicated = sp || l.tp == 1 ? 0 : 8 * h;
  return (lc.actBytes / tp + replicated) * tokens;
}

int64_t countMoe(const ModelConfig& c, const StageLayers& s) {
  int64_t lo = std::max(s.first, c.denseLayers), hi = s.first + s.count;
  return c.moe() ? std::max<int64_t>(0, hi - lo) : 0;
}

}  // namespace

StageLayers stageLayers(const ModelConfig& m, const Layout& l, int64_t stage) {
  StageLayers s;
  s.embedding = stage == 0;
  s.loss = stage == l.pp - 1;
  if (l.pp == 1) {
    s.count = m.layers;
    return s;
  }
  if (l.split == PipeSplit::Even) {
    int64_t per = m.layers / l.pp;
    s.first = stage * per;
    s.count = per;
    return s;
  }
  if (l.split == PipeSplit::Uneven) {
    int64_t k = (m.layers - l.firstLayers - l.lastLayers) / std::max<int64_t>(1, l.pp - 2);
    s.first = stage == 0 ? 0 : l.firstLayers + (stage - 1) * k;
    s.count = stage == 0 ? l.firstLayers : stage == l.pp - 1 ? l.lastLayers : k;
    return s;
  }
  int64_t slots = (m.layers + 2) / l.pp;
  s.first = stage == 0 ? 0 : slots * stage - 1;
  s.count = stage == 0 || stage == l.pp - 1 ? slots - 1 : slots;
  return s;
}

double stepModelFlops(const ModelCounts& mc, const Job& job) {
  return mc.flopsPerToken(job.seq) * double(job.seq) * double(job.globalBatch);
}

Estimate estimate(const ModelCounts& mc, const GpuSpec& g, const Layout& l, const Job& job) {
  const ModelConfig& c = *mc.cfg;
  Estimate e;
  int64_t m = job.globalBatch / (l.microBatch * l.dp);
  e.microBatches = m;
  double h = double(c.hidden), tp = double(l.tp);
  double tokens = double(l.microBatch) * double(job.seq) / double(l.cp);
  double peak = g.peakTflops * 1e12;
  LayerTime dense = layerTime(c, mc.dense, false, g, l, job);
  LayerTime moe = c.moe() ? layerTime(c, mc.moe, true, g, l, job) : LayerTime{};
  int64_t dpShard = l.dp * l.cp;
  int64_t expertDp = std::max<int64_t>(1, l.world() / (l.etp * l.ep * l.pp));
  double maxMb = 0;
  TimeBreakdown slow;
  double dpExposed = 0, optTime = 0;
  std::vector<int64_t> stages = {0};
  if (l.pp > 1) stages.push_back(1);
  if (l.pp > 2) stages.push_back(l.pp - 1);
  for (int64_t r : stages) {
    StageLayers s = stageLayers(c, l, r);
    int64_t nm = countMoe(c, s), nd = s.count - nm;
    // Time per micro-batch.
    TimeBreakdown tb;
    auto add = [&](const LayerTime& t, int64_t n) {
      tb.compute += double(n) * t.compute;
      tb.tpComm += double(n) * t.tp;
      tb.cpComm += double(n) * t.cp;
      tb.epComm += double(n) * t.ep;
    };
    add(dense, nd);
    add(moe, nm);
    double fwdWindow = double(nd) * dense.fwd + double(nm) * moe.fwd;
    double bwdWindow = double(nd) * dense.bwd + double(nm) * moe.bwd;
    if (s.loss) {  // logit GEMM (forward + backward) and fp32 cross entropy, memory-bound
      double logits = tokens * double(c.vocab) / tp;
      tb.compute += 6 * logits * h / (peak * g.gemmEff) + 3 * 6 * logits / (g.hbmTBs * 1e12 * g.hbmEff);
    }
    double mbTime = tb.compute + tb.tpComm + tb.cpComm + tb.epComm;
    if (mbTime > maxMb) {
      maxMb = mbTime;
      slow = tb;
    }
    // Memory.
    MemoryBreakdown mem;
    double expertParams = double(nm) * mc.moe.expertParams;
    double denseParams = double(nd) * mc.dense.params + double(nm) * (mc.moe.params - mc.moe.expertParams);
    double pDense = denseParams / tp, pExpert = expertParams / double(l.ep * l.etp);
    if (s.embedding) pDense += mc.embeddingParams / tp;
    if (s.loss) pDense += (mc.outputParams > 0 || l.pp > 1 ? double(c.vocab) * h : 0) / tp + mc.finalNormParams;
    mem.weights = 2 * (pDense + pExpert);
    mem.grads = 4 * (pDense + pExpert);
    mem.optimizer = l.distributedOptimizer ? 12 * (pDense / double(dpShard) + pExpert / double(expertDp))
                                           : 12 * (pDense + pExpert);
    double perMb = double(nd) * layerActBytes(c, mc.dense, l, job, false) +
                   double(nm) * layerActBytes(c, mc.moe, l, job, false);
    double inFlight = l.vpp == 1
                          ? double(std::min<int64_t>(m, l.pp - r))
                          : double(std::min<int64_t>(m * l.vpp, 2 * (l.pp - r - 1) + (l.vpp - 1) * l.pp + 1)) /
                                double(l.vpp);
    mem.activations = inFlight * perMb;
    if (l.recompute == Recompute::Full)  // one layer's full activations while it is recomputed
      mem.activations += std::max(layerActBytes(c, mc.dense, l, job, true),
                                  nm > 0 ? layerActBytes(c, mc.moe, l, job, true) : 0.0);
    if (s.loss) mem.logits = tokens * double(c.vocab) / tp * 6;  // bf16 logits + fp32 softmax
    double sum = mem.weights + mem.grads + mem.optimizer + mem.activations + mem.logits;
    mem.totalGib = sum * (1 + kFragmentation) / double(1ll << 30) + kReserveGib;
    if (mem.totalGib > e.memory.totalGib) {
      e.memory = mem;
      e.heaviestStage = int(r);
    }
    // Data parallel gradient reduction and parameter gather: overlapped with
    // the last micro-batch's backward and the first one's forward; the last
    // bucket is always exposed.
    Link dpLink = linkFor(g, l.tp * l.cp * l.dp), epLink = linkFor(g, l.world() / l.pp);
    double rs = ringTime(4 * pDense, dpShard, dpLink) + ringTime(4 * pExpert, expertDp, epLink);
    double ag = ringTime(2 * pDense, dpShard, dpLink) + ringTime(2 * pExpert, expertDp, epLink);
    double exposed = 0;
    if (l.distributedOptimizer) {
      exposed = std::max(0.0, rs - bwdWindow) + std::max(0.0, ag - fwdWindow);
    } else {
      exposed = std::max(0.0, 2 * rs - bwdWindow);
    }
    exposed += ringTime(4 * std::min(kGradBucketParams, pDense + pExpert), dpShard, dpLink);
    dpExposed = std::max(dpExposed, exposed);
    double optParams = l.distributedOptimizer ? pDense / double(dpShard) + pExpert / double(expertDp)
                                              : pDense + pExpert;
    optTime = std::max(optTime, optParams * 40 / (g.hbmTBs * 1e12 * g.hbmEff));  // Adam: ~40 bytes/param
  }
  e.fits = e.memory.totalGib <= g.memoryGib;
  slow.bubble = double(l.pp - 1) / double(l.vpp) * maxMb;
  if (l.pp > 1) {
    Link ppLink = linkFor(g, l.tp * l.cp * l.dp + 1);
    bool sp = l.sequenceParallel && l.tp > 1;
    double bytes = tokens * h * 2 / (sp ? tp : 1);
    slow.ppComm = 2 * double(l.pp - 1) * (bytes / ppLink.bytesPerS + ppLink.latency);
  }
  slow.dpComm = dpExposed;
  slow.optimizer = optTime;
  e.time = slow;
  e.stepSeconds = double(m) * maxMb + slow.bubble + slow.ppComm + slow.dpComm + slow.optimizer;
  e.tflopsPerGpu = stepModelFlops(mc, job) / (e.stepSeconds * double(l.world())) / 1e12;
  e.mfu = e.tflopsPerGpu / g.peakTflops;
  return e;
}

}  // namespace sp::planner

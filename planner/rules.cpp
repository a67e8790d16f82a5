#include "planner/rules.h"

namespace sp::planner {

const char* severityName(Severity s) {
  switch (s) {
    case Severity::Error: return "error";
    case Severity::Warning: return "warning";
    case Severity::Info: return "info";
  }
  return "?";
}

bool unevenSplit(int64_t layers, int64_t pp, int64_t& first, int64_t& last) {
  if (pp <= 2) return false;
  int64_t k = (layers + pp - 1) / pp;
  int64_t rest = layers - (pp - 2) * k;
  if (rest < 2 || rest > 2 * k) return false;
  last = rest / 2;
  first = rest - last;
  return true;
}

bool splitDivides(const ModelConfig& m, PipeSplit split, int64_t pp, int64_t vpp) {
  if (pp == 1) return vpp == 1;
  if (split == PipeSplit::Uneven) {
    int64_t f = 0, g = 0;
    return vpp == 1 && unevenSplit(m.layers, pp, f, g);
  }
  int64_t slots = m.layers + (split == PipeSplit::EmbeddingLoss ? 2 : 0);
  return slots % (pp * vpp) == 0 && slots / pp > (split == PipeSplit::EmbeddingLoss ? 1 : 0);
}

std::vector<Finding> checkStructure(const ModelConfig& m, const Layout& l, const Job& job, bool all) {
  std::vector<Finding> out;
  auto S = [](int64_t v) { return std::to_string(v); };
  auto fail = [&](const char* id, bool megatron, std::string msg) {
    out.push_back(Finding{id, Severity::Error, megatron, std::move(msg)});
    return !all;
  };
  int64_t tpPpCp = l.tp * l.pp * l.cp;
  if (job.gpus % tpPpCp != 0 &&
      fail("world-size", true,
           "world size " + S(job.gpus) + " is not divisible by tp " + S(l.tp) + " x pp " + S(l.pp) + " x cp " +
               S(l.cp) + " = " + S(tpPpCp)))
    return out;
  if (job.gpus % tpPpCp == 0 && l.dp * tpPpCp != job.gpus &&
      fail("world-size", true,
           "dp " + S(l.dp) + " is not world size " + S(job.gpus) + " / (tp x pp x cp = " + S(tpPpCp) + ") = " +
               S(job.gpus / tpPpCp)))
    return out;
  if (m.heads % l.tp != 0 &&
      fail("heads-tp", true, "attention heads " + S(m.heads) + " are not divisible by tp " + S(l.tp)))
    return out;
  if (!m.mla() && m.kvHeads % l.tp != 0 &&
      fail("query-groups-tp", true, "query groups " + S(m.kvHeads) + " are not divisible by tp " + S(l.tp)))
    return out;
  if (l.cp > 1 && job.seq % (2 * l.cp) != 0 &&
      fail("seq-cp", true,
           "sequence length " + S(job.seq) + " is not divisible by 2 x cp " + S(l.cp) + " = " + S(2 * l.cp)))
    return out;
  if (!m.moe() && l.ep > 1 && fail("experts-ep", true, "ep " + S(l.ep) + " on a model without experts"))
    return out;
  if (m.moe() && m.experts % l.ep != 0 &&
      fail("experts-ep", true, "experts " + S(m.experts) + " are not divisible by ep " + S(l.ep)))
    return out;
  int64_t side = l.etp * l.ep * l.pp;
  if (job.gpus % side != 0 &&
      fail("expert-world", true,
           "world size " + S(job.gpus) + " is not divisible by etp " + S(l.etp) + " x ep " + S(l.ep) + " x pp " +
               S(l.pp) + " = " + S(side)))
    return out;
  int64_t mbDp = l.microBatch * l.dp;
  if (job.globalBatch % mbDp != 0 &&
      fail("global-batch", true,
           "global batch " + S(job.globalBatch) + " is not divisible by micro-batch " + S(l.microBatch) +
               " x dp " + S(l.dp) + " = " + S(mbDp)))
    return out;
  if (l.vpp > 1 && l.pp == 1 &&
      fail("interleaved-pp", true, "the interleaved schedule (vpp " + S(l.vpp) + ") needs pp > 1"))
    return out;
  if (l.pp > 1 && !splitDivides(m, l.split, l.pp, 1)) {
    std::string msg = l.split == PipeSplit::Even
                          ? "layers " + S(m.layers) + " are not divisible by pp " + S(l.pp)
                      : l.split == PipeSplit::EmbeddingLoss
                          ? "layers " + S(m.layers) + " + embedding + loss = " + S(m.layers + 2) +
                                " are not divisible by pp " + S(l.pp)
                          : "layers " + S(m.layers) + " have no uneven split over pp " + S(l.pp) +
                                " (even middle stages, first and last at most as heavy)";
    if (fail("layers-pp", true, msg)) return out;
  } else if (l.vpp > 1 && l.split == PipeSplit::Uneven) {
    if (fail("layers-vpp", false, "the uneven split is modeled without virtual stages, not vpp " + S(l.vpp)))
      return out;
  } else if (l.vpp > 1 && !splitDivides(m, l.split, l.pp, l.vpp)) {
    int64_t slots = (m.layers + (l.split == PipeSplit::EmbeddingLoss ? 2 : 0)) / l.pp;
    if (fail("layers-vpp", true,
             "layers per pipeline stage " + S(slots) + " are not divisible by vpp " + S(l.vpp)))
      return out;
  }
  int64_t micro = job.globalBatch % mbDp == 0 ? job.globalBatch / mbDp : 0;
  if (micro > 0 && l.vpp > 1 && micro % l.pp != 0 &&
      fail("microbatches-interleaved", true,
           "micro-batches " + S(micro) + " are not divisible by pp " + S(l.pp) +
               ", as the interleaved schedule needs"))
    return out;
  if (micro > 0 && micro < l.pp &&
      fail("microbatches-pp", false,
           "micro-batches " + S(micro) + " are fewer than pipeline stages " + S(l.pp) + ": " +
               S(l.pp - micro) + " stages idle in every slot"))
    return out;
  return out;
}

}  // namespace sp::planner

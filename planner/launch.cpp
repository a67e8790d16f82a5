#include "planner/launch.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <set>
#include <sstream>

namespace sp::planner {

namespace {

// Arguments this checker reads; flags take no value.
const std::set<std::string> kFlags = {
    "--sequence-parallel", "--group-query-attention", "--use-distributed-optimizer",
    "--account-for-embedding-in-pipeline-split", "--account-for-loss-in-pipeline-split",
    "--untie-embeddings-and-output-weights", "--swiglu", "--bf16", "--fp16"};
const std::set<std::string> kValued = {
    "--tensor-model-parallel-size", "--pipeline-model-parallel-size", "--context-parallel-size",
    "--expert-model-parallel-size", "--expert-tensor-parallel-size", "--num-layers-per-virtual-pipeline-stage",
    "--virtual-pipeline-model-parallel-size", "--micro-batch-size", "--global-batch-size", "--seq-length",
    "--num-layers", "--hidden-size", "--num-attention-heads", "--num-query-groups", "--num-experts",
    "--moe-router-topk", "--ffn-hidden-size", "--recompute-granularity", "--recompute-method",
    "--recompute-num-layers", "--decoder-first-pipeline-num-layers",
    "--decoder-last-pipeline-num-layers", "--make-vocab-size-divisible-by", "--vocab-size", "--kv-channels"};

std::vector<std::string> tokenize(const std::string& text) {
  std::vector<std::string> toks;
  std::string cur;
  bool have = false;
  char quote = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    char ch = text[i];
    if (quote) {
      if (ch == quote) quote = 0;
      else cur += ch;
      continue;
    }
    if (ch == '\\' && i + 1 < text.size() && (text[i + 1] == '\n' || text[i + 1] == '\r')) {
      ++i;
      continue;
    }
    if (ch == '#' && !have) {
      while (i < text.size() && text[i] != '\n') ++i;
      continue;
    }
    if (ch == '"' || ch == '\'') {
      quote = ch;
      have = true;
      continue;
    }
    if (std::isspace(static_cast<unsigned char>(ch))) {
      if (have) toks.push_back(cur);
      cur.clear();
      have = false;
      continue;
    }
    cur += ch;
    have = true;
  }
  if (have) toks.push_back(cur);
  return toks;
}

std::string S(int64_t v) { return std::to_string(v); }

}  // namespace

Result<MegatronArgs> parseMegatronArgs(const std::string& text, const std::string& where) {
  MegatronArgs a;
  auto toks = tokenize(text);
  size_t i = 0;
  while (i < toks.size() && toks[i].rfind("--", 0) != 0) ++i;  // torchrun ... pretrain_gpt.py
  for (; i < toks.size(); ++i) {
    std::string t = toks[i];
    if (t.rfind("--", 0) != 0) {
      a.ignored.push_back(t);
      continue;
    }
    std::string value;
    bool hasValue = false;
    if (auto eq = t.find('='); eq != std::string::npos) {
      value = t.substr(eq + 1);
      t = t.substr(0, eq);
      hasValue = true;
    }
    if (kFlags.count(t)) {
      if (hasValue) return makeError("args-parse", t + " takes no value", where);
      a.values[t] = "";
    } else if (kValued.count(t)) {
      if (!hasValue) {
        if (i + 1 >= toks.size() || toks[i + 1].rfind("--", 0) == 0)
          return makeError("args-parse", t + " needs a value", where);
        value = toks[++i];
      }
      a.values[t] = value;
    } else {
      a.ignored.push_back(t);
      // An unknown argument's value (a token not starting with --) is skipped with it.
      if (!hasValue && i + 1 < toks.size() && toks[i + 1].rfind("--", 0) != 0) ++i;
    }
  }
  return a;
}

Result<MegatronArgs> parseLaunchPlan(const std::string& text) {
  static const std::map<std::string, std::string> keys = {
      {"tp", "--tensor-model-parallel-size"}, {"pp", "--pipeline-model-parallel-size"},
      {"cp", "--context-parallel-size"},      {"ep", "--expert-model-parallel-size"},
      {"etp", "--expert-tensor-parallel-size"}, {"vpp", "--virtual-pipeline-model-parallel-size"},
      {"mb", "--micro-batch-size"},           {"gbs", "--global-batch-size"},
      {"seq", "--seq-length"},                {"recompute", "--recompute-granularity"}};
  MegatronArgs a;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item.empty()) continue;
    auto eq = item.find('=');
    if (eq == std::string::npos) return makeError("args-parse", "'" + item + "' is not KEY=VALUE", "--plan");
    std::string k = item.substr(0, eq), v = item.substr(eq + 1);
    auto flag = [&](const char* name) -> Status {
      if (v == "1" || v == "true" || v == "on") a.values[name] = "";
      else if (!(v == "0" || v == "false" || v == "off"))
        return makeError("args-parse", k + ": '" + v + "' is not true or false", "--plan");
      return okStatus();
    };
    if (auto it = keys.find(k); it != keys.end()) {
      if (k == "recompute" && v == "none") continue;
      a.values[it->second] = v;
    } else if (k == "sp") {
      SP_TRY(flag("--sequence-parallel"));
    } else if (k == "distopt") {
      SP_TRY(flag("--use-distributed-optimizer"));
    } else if (k == "split") {
      if (v == "embedding-loss") {
        a.values["--account-for-embedding-in-pipeline-split"] = "";
        a.values["--account-for-loss-in-pipeline-split"] = "";
      } else if (v != "even") {
        return makeError("args-parse", "split: '" + v + "' is not even or embedding-loss", "--plan");
      }
    } else {
      return makeError("args-parse",
                       "unknown key '" + k + "' (tp, pp, vpp, cp, ep, etp, mb, gbs, seq, sp, recompute, distopt, split)",
                       "--plan");
    }
  }
  return a;
}

bool LaunchReport::broken() const {
  for (const auto& f : findings)
    if (f.severity == Severity::Error) return true;
  return false;
}

Result<LaunchReport> checkLaunch(const ModelConfig& config, const GpuSpec& gpu, int64_t gpus,
                                 const MegatronArgs& args) {
  auto has = [&](const char* k) { return args.values.count(k) > 0; };
  auto integer = [&](const char* k, int64_t dflt) -> Result<int64_t> {
    auto it = args.values.find(k);
    if (it == args.values.end()) return dflt;
    int64_t x = 0;
    const std::string& v = it->second;
    auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
    if (ec != std::errc() || p != v.data() + v.size() || x <= 0)
      return makeError("args-value", std::string(k) + ": '" + v + "' is not a positive integer");
    return x;
  };
  if (gpus <= 0) return makeError("args-value", "--gpus must be positive");
  LaunchReport r;
  std::vector<Finding>& out = r.findings;
  auto check = [&](const char* id) { r.checked.push_back(id); };
  auto add = [&](const char* id, Severity s, bool megatron, std::string msg) {
    out.push_back(Finding{id, s, megatron, std::move(msg)});
  };
  // The model Megatron builds: its arguments, the config where they are absent.
  ModelConfig m = config;
  check("model-mismatch");
  auto modelArg = [&](const char* k, int64_t& field, const char* what) -> Status {
    SP_ASSIGN(int64_t v, integer(k, field));
    if (v != field)
      add("model-mismatch", Severity::Warning, false,
          std::string(k) + " " + S(v) + " differs from the config's " + what + " " + S(field) +
              ": megatron builds " + S(v));
    field = v;
    return okStatus();
  };
  SP_TRY(modelArg("--num-layers", m.layers, "num_hidden_layers"));
  SP_TRY(modelArg("--hidden-size", m.hidden, "hidden_size"));
  SP_TRY(modelArg("--num-attention-heads", m.heads, "num_attention_heads"));
  if (has("--num-query-groups") || has("--group-query-attention")) {
    if (!has("--group-query-attention"))
      add("model-mismatch", Severity::Warning, false,
          "--num-query-groups without --group-query-attention: megatron ignores it and uses " + S(m.heads) +
              " query groups");
    else SP_TRY(modelArg("--num-query-groups", m.kvHeads, "num_key_value_heads"));
  }
  if (has("--num-experts") || m.moe()) {
    int64_t e = m.experts;
    SP_TRY(modelArg("--num-experts", e, "experts"));
    m.experts = e;
  }
  SP_ASSIGN(int64_t tp, integer("--tensor-model-parallel-size", 1));
  SP_ASSIGN(int64_t pp, integer("--pipeline-model-parallel-size", 1));
  SP_ASSIGN(int64_t cp, integer("--context-parallel-size", 1));
  SP_ASSIGN(int64_t ep, integer("--expert-model-parallel-size", 1));
  SP_ASSIGN(int64_t etp, integer("--expert-tensor-parallel-size", tp));
  SP_ASSIGN(int64_t mb, integer("--micro-batch-size", 1));
  SP_ASSIGN(int64_t layersPerVstage, integer("--num-layers-per-virtual-pipeline-stage", 0));
  SP_ASSIGN(int64_t vppArg, integer("--virtual-pipeline-model-parallel-size", 0));
  SP_ASSIGN(int64_t seq, integer("--seq-length", 0));
  SP_ASSIGN(int64_t divisibleBy, integer("--make-vocab-size-divisible-by", 128));
  if (seq == 0) return makeError("args-value", "--seq-length is missing");
  bool sp = has("--sequence-parallel");
  bool split = has("--account-for-embedding-in-pipeline-split") && has("--account-for-loss-in-pipeline-split");
  int64_t dp = gpus % (tp * pp * cp) == 0 ? gpus / (tp * pp * cp) : 0;
  SP_ASSIGN(int64_t gbs, integer("--global-batch-size", mb * std::max<int64_t>(1, dp)));
  SP_ASSIGN(int64_t firstArg, integer("--decoder-first-pipeline-num-layers", 0));
  SP_ASSIGN(int64_t lastArg, integer("--decoder-last-pipeline-num-layers", 0));
  bool uneven = firstArg > 0 || lastArg > 0;
  int64_t slots = m.layers + (split ? 2 : 0);
  bool interleaved = layersPerVstage > 0 || vppArg > 0;
  int64_t vpp = vppArg > 0 ? vppArg : 1;
  if (layersPerVstage > 0 && pp > 0 && slots % pp == 0 && (slots / pp) % layersPerVstage == 0)
    vpp = slots / pp / layersPerVstage;

  // Megatron-LM's own validation.
  check("world-size");
  if (gpus % (tp * pp * cp) != 0)
    add("world-size", Severity::Error, true,
        "world size " + S(gpus) + " is not divisible by tp " + S(tp) + " x pp " + S(pp) + " x cp " + S(cp) + " = " +
            S(tp * pp * cp));
  check("expert-world");
  if (gpus % (etp * ep * pp) != 0)
    add("expert-world", Severity::Error, true,
        "world size " + S(gpus) + " is not divisible by etp " + S(etp) + " x ep " + S(ep) + " x pp " + S(pp) +
            " = " + S(etp * ep * pp));
  check("global-batch");
  if (dp > 0 && gbs % (mb * dp) != 0)
    add("global-batch", Severity::Error, true,
        "global batch " + S(gbs) + " is not divisible by micro-batch " + S(mb) + " x dp " + S(dp) + " = " +
            S(mb * dp));
  check("hidden-heads");
  if (!has("--kv-channels") && !m.mla() && m.hidden % m.heads != 0)
    add("hidden-heads", Severity::Error, true,
        "hidden size " + S(m.hidden) + " is not divisible by attention heads " + S(m.heads));
  check("heads-tp");
  if (m.heads % tp != 0)
    add("heads-tp", Severity::Error, true, "attention heads " + S(m.heads) + " are not divisible by tp " + S(tp));
  check("query-groups-tp");
  if (!m.mla() && m.kvHeads % tp != 0)
    add("query-groups-tp", Severity::Error, true,
        "query groups " + S(m.kvHeads) + " are not divisible by tp " + S(tp));
  check("heads-query-groups");
  if (m.heads % m.kvHeads != 0)
    add("heads-query-groups", Severity::Error, true,
        "attention heads " + S(m.heads) + " are not divisible by query groups " + S(m.kvHeads));
  check("seq-cp");
  if (cp > 1 && seq % (2 * cp) != 0)
    add("seq-cp", Severity::Error, true,
        "sequence length " + S(seq) + " is not divisible by 2 x cp " + S(cp) + " = " + S(2 * cp));
  check("experts-ep");
  if (ep > 1 && !m.moe())
    add("experts-ep", Severity::Error, true, "ep " + S(ep) + " on a model without experts");
  else if (m.moe() && m.experts % ep != 0)
    add("experts-ep", Severity::Error, true, "experts " + S(m.experts) + " are not divisible by ep " + S(ep));
  check("layers-uneven");
  int64_t middle = pp - (firstArg > 0) - (lastArg > 0);
  int64_t rest = m.layers - firstArg - lastArg;
  if (uneven && (middle <= 0 || rest < middle || rest % middle != 0))
    add("layers-uneven", Severity::Error, true,
        "layers " + S(m.layers) + " - first stage " + S(firstArg) + " - last stage " + S(lastArg) + " = " + S(rest) +
            " are not divisible by the " + S(middle) + " other stages");
  check("layers-vpp");
  if (interleaved) {
    if (slots % pp != 0)
      add("layers-vpp", Severity::Error, true,
          "layers " + S(slots) + " are not divisible by pp " + S(pp) + ", as the interleaved schedule needs");
    else if (layersPerVstage > 0 && (slots / pp) % layersPerVstage != 0)
      add("layers-vpp", Severity::Error, true,
          "layers per pipeline stage " + S(slots / pp) + " are not divisible by layers per virtual stage " +
              S(layersPerVstage));
    else if (vppArg > 0 && (slots / pp) % vppArg != 0)
      add("layers-vpp", Severity::Error, true,
          "layers per pipeline stage " + S(slots / pp) + " are not divisible by vpp " + S(vppArg));
  }
  check("interleaved-pp");
  if (interleaved && pp <= 1)
    add("interleaved-pp", Severity::Error, true, "the interleaved schedule needs pp > 1, not " + S(pp));
  int64_t micro = dp > 0 && gbs % (mb * dp) == 0 ? gbs / (mb * dp) : 0;
  check("microbatches-interleaved");
  if (interleaved && pp > 1 && micro > 0 && micro % pp != 0)
    add("microbatches-interleaved", Severity::Error, true,
        "micro-batches " + S(micro) + " are not divisible by pp " + S(pp) + ", as the interleaved schedule needs");
  check("sequence-parallel-tp");
  if (sp && tp == 1)
    add("sequence-parallel-tp", Severity::Warning, true,
        "sequence parallel needs tp > 1: megatron turns it off at tp 1");
  check("moe-sequence-parallel");
  if (m.moe() && ep > 1 && tp > 1 && !sp)
    add("moe-sequence-parallel", Severity::Error, true,
        "expert parallel with tp " + S(tp) + " needs --sequence-parallel");

  // What Megatron misses.
  check("layers-dropped");
  if (!interleaved && !uneven && pp > 1 && slots % pp != 0) {
    int64_t per = slots / pp;
    add("layers-dropped", Severity::Error, false,
        "layers " + S(slots) + " are not divisible by pp " + S(pp) + ": megatron-core builds " + S(per) +
            " per stage and silently drops " + S(slots - per * pp));
  }
  check("vocab-tp");
  int64_t mult = divisibleBy * tp;
  int64_t padded = (m.vocab + mult - 1) / mult * mult;
  if (m.vocab % tp != 0)
    add("vocab-tp", Severity::Warning, false,
        "vocab " + S(m.vocab) + " is not divisible by tp " + S(tp) + ": megatron pads it to " + S(padded) +
            " rows (multiple of " + S(divisibleBy) + " x tp " + S(tp) + "); a checkpoint with " + S(m.vocab) +
            " rows must be padded before it loads");
  check("microbatches-pp");
  if (micro > 0 && pp > 1 && micro < pp)
    add("microbatches-pp", Severity::Error, false,
        "micro-batches " + S(micro) + " are fewer than pipeline stages " + S(pp) + ": " + S(pp - micro) +
            " stages idle in every slot, and schedules that assume at least pp in flight hang");

  // Memory and step time, when the layout is well formed.
  r.layout.tp = tp, r.layout.pp = pp, r.layout.vpp = vpp, r.layout.cp = cp, r.layout.ep = ep;
  r.layout.etp = etp, r.layout.dp = std::max<int64_t>(1, dp), r.layout.microBatch = mb;
  r.layout.sequenceParallel = sp;
  r.layout.distributedOptimizer = has("--use-distributed-optimizer");
  r.layout.split = split ? PipeSplit::EmbeddingLoss : PipeSplit::Even;
  if (uneven && middle > 0) {
    r.layout.split = PipeSplit::Uneven;
    int64_t k = rest / middle;
    r.layout.firstLayers = firstArg > 0 ? firstArg : k;
    r.layout.lastLayers = lastArg > 0 ? lastArg : k;
  }
  auto rec = args.values.find("--recompute-granularity");
  if (rec != args.values.end()) {
    if (rec->second == "full") r.layout.recompute = Recompute::Full;
    else if (rec->second == "selective") r.layout.recompute = Recompute::Selective;
    else return makeError("args-value", "--recompute-granularity: '" + rec->second + "' is not full or selective");
  }
  r.job = Job{gpus, seq, gbs};
  if (!args.ignored.empty()) {
    std::string list;
    for (const auto& s : args.ignored) list += (list.empty() ? "" : " ") + s;
    add("args-ignored", Severity::Info, false, "not checked: " + list);
  }
  check("memory");
  check("step-time");
  if (r.broken()) {
    add("step-time", Severity::Info, false, "memory and step time not predicted: the layout breaks a rule above");
    return r;
  }
  ModelCounts mc = countModel(m);
  r.estimate = estimate(mc, gpu, r.layout, r.job);
  r.predicted = true;
  const Estimate& e = r.estimate;
  char buf[256];
  std::snprintf(buf, sizeof buf, "heaviest stage %d needs %.1f GiB of %.1f GiB on %s", e.heaviestStage,
                e.memory.totalGib, gpu.memoryGib, gpu.kind.c_str());
  if (!e.fits) add("memory", Severity::Error, false, buf);
  std::snprintf(buf, sizeof buf, "predicted step %.2f s, %.0f TFLOPs/GPU, MFU %.1f%% (%lld micro-batches, bubble %.2f s)",
                e.stepSeconds, e.tflopsPerGpu, 100 * e.mfu, (long long)e.microBatches, e.time.bubble);
  add("step-time", Severity::Info, false, buf);
  if (e.fits) {
    std::snprintf(buf, sizeof buf, "heaviest stage %d needs %.1f GiB of %.1f GiB on %s", e.heaviestStage,
                  e.memory.totalGib, gpu.memoryGib, gpu.kind.c_str());
    add("memory", Severity::Info, false, buf);
  }
  return r;
}

}  // namespace sp::planner

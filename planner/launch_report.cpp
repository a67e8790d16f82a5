// check-launch reports: text, JSON, JUnit.
#include <cstdio>
#include <nlohmann/json.hpp>

#include "planner/launch.h"

namespace sp::planner {

namespace {

std::string xmlEscape(const std::string& s) {
  std::string o;
  for (char c : s) {
    switch (c) {
      case '&': o += "&amp;"; break;
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '"': o += "&quot;"; break;
      default: o += c;
    }
  }
  return o;
}

std::string layoutLine(const LaunchReport& r) {
  const Layout& l = r.layout;
  char b[256];
  std::snprintf(b, sizeof b, "tp %lld pp %lld vpp %lld cp %lld ep %lld etp %lld dp %lld mb %lld, global batch %lld, seq %lld",
                (long long)l.tp, (long long)l.pp, (long long)l.vpp, (long long)l.cp, (long long)l.ep,
                (long long)l.etp, (long long)l.dp, (long long)l.microBatch, (long long)r.job.globalBatch,
                (long long)r.job.seq);
  return b;
}

int count(const LaunchReport& r, Severity s) {
  int n = 0;
  for (const auto& f : r.findings) n += f.severity == s;
  return n;
}

}  // namespace

std::string launchText(const LaunchReport& r) {
  std::string out = "layout: " + layoutLine(r) + " on " + std::to_string(r.job.gpus) + " GPUs\n";
  for (const auto& f : r.findings)
    out += std::string(severityName(f.severity)) + ": " + f.id + (f.megatron ? " (megatron)" : "") + ": " +
           f.message + "\n";
  int errors = count(r, Severity::Error), warnings = count(r, Severity::Warning);
  out += (errors ? "broken: " : "ok: ") + std::to_string(r.checked.size()) + " rules checked, " +
         std::to_string(errors) + " broken, " + std::to_string(warnings) + " warnings\n";
  if (const auto& c = r.layerCheck) {
    char secs[32];
    std::snprintf(secs, sizeof secs, "%.2f", c->seconds);
    out += "verify: " + c->what + ": " + c->verdict + (c->verdict == "not generated" ? "" : std::string(" in ") + secs + " s") +
           (c->detail.empty() ? "" : ": " + c->detail) + "\n";
  } else {
    out += "verify: not run (the layout's program is verified by the shardproof CLI)\n";
  }
  return out;
}

std::string launchJson(const LaunchReport& r) {
  nlohmann::ordered_json j;
  j["verdict"] = r.broken() ? "broken" : "ok";
  const Layout& l = r.layout;
  j["layout"] = {{"tp", l.tp}, {"pp", l.pp}, {"vpp", l.vpp}, {"cp", l.cp}, {"ep", l.ep}, {"etp", l.etp},
                 {"dp", l.dp}, {"micro_batch", l.microBatch}, {"global_batch", r.job.globalBatch},
                 {"seq", r.job.seq}, {"sequence_parallel", l.sequenceParallel},
                 {"recompute", recomputeName(l.recompute)}, {"distributed_optimizer", l.distributedOptimizer}};
  j["checked"] = r.checked;
  j["findings"] = nlohmann::ordered_json::array();
  for (const auto& f : r.findings)
    j["findings"].push_back({{"id", f.id}, {"severity", severityName(f.severity)}, {"megatron", f.megatron},
                             {"message", f.message}});
  if (r.predicted) {
    const Estimate& e = r.estimate;
    j["prediction"] = {{"memory_gib_per_gpu", e.memory.totalGib}, {"fits", e.fits},
                       {"heaviest_stage", e.heaviestStage}, {"step_seconds", e.stepSeconds},
                       {"tflops_per_gpu", e.tflopsPerGpu}, {"mfu", e.mfu}, {"micro_batches", e.microBatches}};
  } else {
    j["prediction"] = nullptr;
  }
  if (const auto& c = r.layerCheck)
    j["layer_check"] = {{"what", c->what}, {"verdict", c->verdict}, {"detail", c->detail}, {"seconds", c->seconds}};
  else
    j["layer_check"] = nullptr;
  return j.dump(2) + "\n";
}

std::string launchJUnit(const LaunchReport& r) {
  // One test case per rule checked; a broken rule is a failure, warnings go
  // to system-out.
  std::string cases;
  int failures = 0;
  for (const auto& id : r.checked) {
    std::string fail, note;
    for (const auto& f : r.findings) {
      if (f.id != id) continue;
      if (f.severity == Severity::Error) fail += (fail.empty() ? "" : "; ") + f.message;
      else note += std::string(severityName(f.severity)) + ": " + f.message + "\n";
    }
    cases += "    <testcase classname=\"check-launch\" name=\"" + xmlEscape(id) + "\"";
    if (fail.empty() && note.empty()) {
      cases += "/>\n";
      continue;
    }
    cases += ">\n";
    if (!fail.empty()) {
      ++failures;
      cases += "      <failure type=\"" + xmlEscape(id) + "\" message=\"" + xmlEscape(fail) + "\"/>\n";
    }
    if (!note.empty()) cases += "      <system-out>" + xmlEscape(note) + "</system-out>\n";
    cases += "    </testcase>\n";
  }
  size_t tests = r.checked.size();
  if (const auto& c = r.layerCheck) {
    // The layout's program: a failure when refuted, skipped when not
    // generated or inconclusive (with the reason).
    ++tests;
    cases += "    <testcase classname=\"check-launch\" name=\"layer-verification\">\n";
    if (c->verdict == "refuted") {
      ++failures;
      cases += "      <failure type=\"refuted\" message=\"" + xmlEscape(c->what + ": " + c->detail) + "\"/>\n";
    } else if (c->verdict != "verified") {
      cases += "      <skipped message=\"" + xmlEscape(c->verdict + ": " + c->detail) + "\"/>\n";
    }
    cases += "      <system-out>" + xmlEscape(c->what + ": " + c->verdict) + "</system-out>\n    </testcase>\n";
  }
  return "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites>\n  <testsuite name=\"check-launch\" tests=\"" +
         std::to_string(tests) + "\" failures=\"" + std::to_string(failures) + "\" errors=\"0\">\n" +
         cases + "  </testsuite>\n</testsuites>\n";
}

}  // namespace sp::planner

#include "tools/verify_partial.h"

#include <algorithm>
#include <filesystem>
#include <functional>
#include <map>
#include <set>

namespace sp::tools {

namespace {

// "depends on torch.where (node 'where') at seq.py:30, whose result size depends on tensor values"
std::string dependsOn(const frontend::FxDroppedOutput& o) {
  return "depends on " + o.op + " (node '" + o.node + "') at " + o.location +
         ", whose result size depends on tensor values";
}

std::string joined(const std::vector<std::string>& parts, const std::string& sep) {
  std::string s;
  for (const auto& n : parts) s += (s.empty() ? "" : sep) + n;
  return s;
}

}  // namespace

bool PartialCheck::isSeqDropped(const std::string& name) const {
  return std::find(seqDropped.begin(), seqDropped.end(), name) != seqDropped.end();
}

void PartialCheck::uncheck(const std::string& name, std::string reason, const std::vector<std::string>& requested) {
  for (const auto& u : unchecked)
    if (u.name == name) return;
  bool asked = requested.empty() || std::find(requested.begin(), requested.end(), name) != requested.end();
  unchecked.push_back({name, std::move(reason), asked});
  std::erase(checkOutputs, name);
}

void uncheckExpectsOnDropped(const frontend::FxPartial& dist, const rewrite::RelationFile& rel,
                             const std::vector<std::string>& requested, PartialCheck& p) {
  std::map<std::string, const frontend::FxDroppedOutput*> dropped;
  for (const auto& o : dist.outputs) dropped.emplace(o.name, &o);
  if (dropped.empty()) return;
  std::function<const frontend::FxDroppedOutput*(const rewrite::Rel&)> reads = [&](const rewrite::Rel& r)
      -> const frontend::FxDroppedOutput* {
    if (r.op == rewrite::RelOp::Dist)
      if (auto it = dropped.find(r.name); it != dropped.end()) return it->second;
    for (const auto& a : r.args)
      if (auto* d = reads(*a)) return d;
    return nullptr;
  };
  for (const auto& o : rel.outputs)
    if (auto* d = o.expr ? reads(*o.expr) : nullptr)
      p.uncheck(o.name,
                "its expect line (" + o.location + ") reads D's '" + d->name + "' (" +
                    std::filesystem::path(d->capture).filename().string() + "), which " + dependsOn(*d),
                requested);
}

PartialCheck planPartialCheck(const frontend::FxPartial& seq, const frontend::FxPartial& dist,
                              const ir::Graph& seqGraph, const std::vector<std::string>& requested) {
  PartialCheck p;
  std::set<std::string> seqOutputs;
  for (ir::ValueId v : seqGraph.outputs()) seqOutputs.insert(seqGraph.value(v).name);
  std::set<std::string> seen;
  auto add = [&](const std::string& name, std::string reason) {
    if (!seen.insert(name).second) return;
    bool asked = requested.empty() || std::find(requested.begin(), requested.end(), name) != requested.end();
    p.unchecked.push_back({name, std::move(reason), asked});
  };
  for (const auto& o : seq.outputs) {
    p.seqDropped.push_back(o.name);
    add(o.name, "S's value " + dependsOn(o));
  }
  std::set<std::string> distOnly;
  for (const auto& o : dist.outputs) {
    const std::string file = std::filesystem::path(o.capture).filename().string();
    if (seqOutputs.count(o.name)) {
      add(o.name, "D's output of that name (" + file + ") " + dependsOn(o));
    } else if (!p.isSeqDropped(o.name) && distOnly.insert(o.name).second) {
      p.distOnly.push_back("D's output '" + o.name + "' (" + file + ") " + dependsOn(o));
      p.notes.push_back(p.distOnly.back() + ", and the import left it out: no S output was rebuilt from it");
    }
  }
  if (!dist.collectives.empty()) {
    std::vector<std::string> shown(dist.collectives.begin(),
                                   dist.collectives.begin() + std::min<size_t>(3, dist.collectives.size()));
    std::string more = dist.collectives.size() > shown.size()
                           ? " and " + std::to_string(dist.collectives.size() - shown.size()) + " more"
                           : "";
    p.notes.push_back("the import left out D's collectives that depend on a data-dependent size (" + joined(shown, ", ") +
                      more + "): the verdict assumes they match across ranks and complete");
  }
  std::set<std::string> unchecked = seen;
  if (requested.empty()) {
    for (ir::ValueId v : seqGraph.outputs())
      if (!unchecked.count(seqGraph.value(v).name)) p.checkOutputs.push_back(seqGraph.value(v).name);
  } else {
    for (const auto& r : requested)
      if (!unchecked.count(r)) p.checkOutputs.push_back(r);
  }
  return p;
}

rewrite::VerifyReport nothingChecked() {
  rewrite::VerifyReport r;
  r.verdict = rewrite::Verdict::Inconclusive;
  return r;
}

void applyPartialCheck(const PartialCheck& p, rewrite::VerifyReport& report) {
  std::vector<std::string> asked;  // "'y' (S's value depends on ...)"
  for (const auto& u : p.unchecked) {
    report.assumptions.push_back("output '" + u.name + "' was not checked" +
                                 (u.requested ? "" : " (not in --outputs)") + ": " + u.reason +
                                 ", and the import left it out");
    if (u.requested) asked.push_back("'" + u.name + "' (" + u.reason + ")");
  }
  for (const auto& n : p.notes) report.assumptions.push_back(n);
  if (!asked.empty()) {
    std::string why = std::string(asked.size() == 1 ? "output " : "outputs ") + joined(asked, "; ") + " not checked: " +
                      "the import left " + (asked.size() == 1 ? "it" : "them") +
                      " out, having no IR for a size that depends on tensor values";
    if (!p.checkOutputs.empty()) why += " (--outputs " + joined(p.checkOutputs, ",") + " checks the others alone)";
    if (report.verdict == rewrite::Verdict::Verified) {
      report.verdict = rewrite::Verdict::Inconclusive;
      report.reason = why;
    } else if (report.verdict == rewrite::Verdict::Inconclusive) {
      report.reason = report.reason.empty() ? why : report.reason + "; " + why;
    }
  }
  if (report.verdict == rewrite::Verdict::Refuted && !p.distOnly.empty()) {
    report.verdict = rewrite::Verdict::Inconclusive;
    report.reason = "refuted on what the import read, but " + joined(p.distOnly, "; ") +
                    ", and the import left it out: it may be what rebuilds S's value";
  }
}

}  // namespace sp::tools

#include "tools/report.h"

#include <algorithm>
#include <cstdio>
#include <deque>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

namespace sp::tools {

using nlohmann::ordered_json;
using rewrite::Verdict;

namespace {

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

std::string errStr(const rewrite::ErrorStat& e) {
  return "max abs err " + fmt("%.3g", e.maxAbsErr) + ", max rel err " + fmt("%.3g", e.maxRelErr);
}

std::string xmlEscape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '&': out += "&amp;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t') out += ' ';
        else out += c;
    }
  }
  return out;
}

// Escapes for a quoted Graphviz label; newlines become centered line breaks.
std::string dotEscape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

ordered_json errJson(const rewrite::ErrorStat& e) {
  return {{"max_abs_err", e.maxAbsErr}, {"max_rel_err", e.maxRelErr}};
}

std::string failureLine(const rewrite::Failure& f) {
  std::string loc = f.location.str();
  return f.seqOp + (loc.empty() ? "" : " (" + loc + ")") + ": " + f.message;
}

}  // namespace

std::string reportText(const rewrite::VerifyReport& r, const std::vector<UncheckedOutput>& unchecked) {
  std::string t = "verdict: " + std::string(rewrite::verdictName(r.verdict)) + "\n";
  if (!r.outputs.empty() || !unchecked.empty()) {
    t += "outputs:\n";
    for (const auto& o : r.outputs)
      t += "  seq." + o.name + " = " + (o.expr ? o.relation : std::string("(no relation)")) + "\n";
    for (const auto& u : unchecked) t += "  seq." + u.name + ": not checked (" + u.reason + ")\n";
  }
  if (r.failure) {
    const auto& f = *r.failure;
    t += "failure: " + failureLine(f) + "\n";
    if (!f.closestDist.empty()) {
      t += "  closest dist tensors:";
      for (const auto& c : f.closestDist) t += " " + c.str();
      t += "\n";
    }
    if (f.witness) {
      const auto& w = *f.witness;
      t += "  witness (seed " + std::to_string(w.seed) + (w.shrunk.empty() ? "" : ", rows shrunk: see assumes") +
           "): at " + f.seqValue + ": " +
           (w.atLocalizedRebuild.empty() ? std::string("no closest D tensor to compare")
                                         : errStr(w.atLocalized) + " (closest rebuild: " + w.atLocalizedRebuild + ")") +
           "\n";
      for (const auto& [name, e] : w.outputs) t += "    output " + name + ": " + errStr(e) + "\n";
      if (!w.fault.empty()) t += "    D faults: " + w.fault + "\n";
    }
    if (!f.repair.empty()) t += "  repair: D verifies with " + f.repair + "\n";
  }
  if (!r.reason.empty()) t += "reason: " + r.reason + "\n";
  for (const auto& a : r.assumptions) t += "assumes: " + a + "\n";
  const auto& s = r.stats;
  t += "stats: " + fmt("%.3f", s.seconds) + " s, " + std::to_string(s.seqOps) + " seq ops, " +
       std::to_string(s.distOps) + " dist ops, " + std::to_string(s.lemmasApplied) +
       " lemma applications, " + std::to_string(s.z3Queries) + " z3 queries, peak rss " +
       fmt("%.1f", s.peakRssMb) + " MB\n";
  return t;
}

std::string reportJson(const rewrite::VerifyReport& r, const std::string& inputRelations,
                       const std::vector<UncheckedOutput>& unchecked) {
  ordered_json j;
  j["verdict"] = std::string(rewrite::verdictName(r.verdict));
  j["outputs"] = ordered_json::array();
  for (const auto& o : r.outputs)
    j["outputs"].push_back({{"name", o.name},
                            {"relation", o.expr ? ordered_json(o.relation) : ordered_json(nullptr)}});
  for (const auto& u : unchecked)
    j["outputs"].push_back({{"name", u.name}, {"relation", nullptr}, {"not_checked", u.reason}});
  if (r.failure) {
    const auto& f = *r.failure;
    ordered_json fj{{"seq_op", f.seqOp}, {"seq_value", f.seqValue}, {"location", f.location.str()},
                    {"message", f.message}, {"closest_dist", strs(f.closestDist)}};
    if (f.witness) {
      ordered_json wj = errJson(f.witness->atLocalized);
      wj["seed"] = f.witness->seed;
      wj["shrunk"] = f.witness->shrunk.empty() ? ordered_json(nullptr) : ordered_json(f.witness->shrunk);
      wj["closest_rebuild"] = f.witness->atLocalizedRebuild.empty() ? ordered_json(nullptr)
                                                                     : ordered_json(f.witness->atLocalizedRebuild);
      wj["outputs"] = ordered_json::object();
      for (const auto& [name, e] : f.witness->outputs) wj["outputs"][name] = errJson(e);
      wj["fault"] = f.witness->fault.empty() ? ordered_json(nullptr) : ordered_json(f.witness->fault);
      fj["witness"] = wj;
    } else {
      fj["witness"] = nullptr;
    }
    fj["repair"] = f.repair.empty() ? ordered_json(nullptr) : ordered_json(f.repair);
    j["failure"] = fj;
  } else {
    j["failure"] = nullptr;
  }
  j["reason"] = r.reason;
  j["assumptions"] = r.assumptions;
  j["input_relations"] = inputRelations;
  const auto& s = r.stats;
  j["stats"] = {{"seconds", s.seconds},         {"seq_ops", s.seqOps},
                {"dist_ops", s.distOps},        {"lemmas_applied", s.lemmasApplied},
                {"z3_queries", s.z3Queries},    {"peak_rss_mb", s.peakRssMb}};
  return j.dump(2) + "\n";
}

std::string reportJUnit(const rewrite::VerifyReport& r, const std::string& suiteName,
                        const std::vector<UncheckedOutput>& unchecked) {
  // One test case per S output; a refuted or inconclusive run fails every
  // output without a relation (inconclusive is never a pass).
  int failures = 0;
  std::string cases;
  for (const auto& o : r.outputs) {
    cases += "    <testcase classname=\"" + xmlEscape(suiteName) + "\" name=\"" +
             xmlEscape("refines:" + o.name) + "\" time=\"" + fmt("%.3f", r.stats.seconds) + "\"";
    if (o.expr && r.verdict == Verdict::Verified) {
      cases += "/>\n";
      continue;
    }
    ++failures;
    std::string msg = r.failure ? failureLine(*r.failure) : r.reason;
    cases += ">\n      <failure type=\"" + std::string(rewrite::verdictName(r.verdict)) +
             "\" message=\"" + xmlEscape(msg) + "\">" + xmlEscape(reportText(r, unchecked)) +
             "</failure>\n    </testcase>\n";
  }
  // outputs not checked are skipped, never passed
  for (const auto& u : unchecked)
    cases += "    <testcase classname=\"" + xmlEscape(suiteName) + "\" name=\"" + xmlEscape("refines:" + u.name) +
             "\" time=\"0.000\">\n      <skipped message=\"" + xmlEscape("not checked: " + u.reason) +
             "\"/>\n    </testcase>\n";
  if (r.outputs.empty()) {
    ++failures;
    cases += "    <testcase classname=\"" + xmlEscape(suiteName) +
             "\" name=\"refinement\">\n      <failure type=\"" +
             std::string(rewrite::verdictName(r.verdict)) + "\" message=\"" +
             xmlEscape(r.failure ? failureLine(*r.failure) : r.reason) + "\"/>\n    </testcase>\n";
  }
  size_t tests = (r.outputs.empty() ? 1 : r.outputs.size()) + unchecked.size();
  return "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites>\n  <testsuite name=\"" +
         xmlEscape(suiteName) + "\" tests=\"" + std::to_string(tests) + "\" failures=\"" +
         std::to_string(failures) + "\" errors=\"0\"" +
         (unchecked.empty() ? std::string() : " skipped=\"" + std::to_string(unchecked.size()) + "\"") +
         " time=\"" + fmt("%.3f", r.stats.seconds) +
         "\">\n" + cases + "  </testsuite>\n</testsuites>\n";
}

std::string failureDot(const ir::Graph& g, const rewrite::VerifyReport& r, int radius) {
  std::optional<ir::ValueId> focus;
  if (r.failure) focus = g.findValue(r.failure->seqValue);
  // Breadth-first over values, both directions, up to `radius` node hops.
  std::set<ir::NodeId> nodes;
  if (focus) {
    std::deque<std::pair<ir::ValueId, int>> q{{*focus, 0}};
    std::set<ir::ValueId> seen{*focus};
    while (!q.empty()) {
      auto [v, d] = q.front();
      q.pop_front();
      if (d >= radius) continue;
      std::vector<ir::NodeId> adj = g.users(v);
      if (g.value(v).producer >= 0) adj.push_back(g.value(v).producer);
      for (ir::NodeId n : adj) {
        nodes.insert(n);
        const auto& node = g.node(n);
        for (const auto* list : {&node.inputs, &node.outputs})
          for (ir::ValueId w : *list)
            if (seen.insert(w).second) q.emplace_back(w, d + 1);
      }
    }
  } else {
    for (ir::NodeId n = 0; n < ir::NodeId(g.nodes().size()) && n < 400; ++n) nodes.insert(n);
  }
  std::string out = "digraph seq {\n  rankdir=TB;\n  node [shape=box, fontname=\"monospace\"];\n";
  std::set<ir::ValueId> leaves;
  for (ir::NodeId n : nodes) {
    const auto& node = g.node(n);
    bool bad = focus && std::find(node.outputs.begin(), node.outputs.end(), *focus) != node.outputs.end();
    std::string label = std::string(ir::opName(node.op)) + " '" + node.name + "'";
    if (!node.loc.empty()) label += "\n" + node.loc.str();
    if (bad && r.failure) label += "\n" + r.failure->message;
    out += "  n" + std::to_string(n) + " [label=\"" + dotEscape(label) + "\"" +
           (bad ? ", color=red, penwidth=2, fontcolor=red" : "") + "];\n";
    for (ir::ValueId v : node.inputs) {
      const auto& val = g.value(v);
      std::string edge = dotEscape(val.name + ": " + val.type.str());
      if (val.producer >= 0 && nodes.count(val.producer)) {
        out += "  n" + std::to_string(val.producer) + " -> n" + std::to_string(n) + " [label=\"" + edge + "\"];\n";
      } else {
        leaves.insert(v);
        out += "  v" + std::to_string(v) + " -> n" + std::to_string(n) + ";\n";
      }
    }
  }
  for (ir::ValueId v : leaves)
    out += "  v" + std::to_string(v) + " [shape=ellipse, label=\"" +
           dotEscape(g.value(v).name + ": " + g.value(v).type.str()) + "\"];\n";
  return out + "}\n";
}

}  // namespace sp::tools

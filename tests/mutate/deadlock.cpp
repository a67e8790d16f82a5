// Deadlock mutants: one rank's blocking communication changed so that the
// ranks no longer agree on one global order of collectives. Unlike the SPMD
// fault kinds, each edits a single rank:
// - collective-order-swap: on one rank, collective B is moved before an
//   earlier collective A (B does not depend on A), where another rank runs
//   both in the original order: a cycle of waiting ranks (A and B on
//   different groups) or the k-th collectives of a group that do not match;
// - collective-group-one-rank: on one rank, a collective names another group
//   whose member list (for that rank) differs: its peers wait in the old
//   group, it waits in the new one.
// Either D cannot run, or it runs with other values: never verified.
#include <algorithm>
#include <optional>
#include <set>

#include "tests/mutate/sites.h"

namespace sp::mutate {

using ir::OpKind;

namespace {

bool blocking(OpKind op) { return isCollective(op) && op != OpKind::Send && op != OpKind::Recv; }

std::string keyOf(const NodeSpec& n) { return n.outputs.empty() ? n.name : n.outputs[0]; }

std::vector<int64_t> members(const ir::Program& dist, const NodeSpec& n, int64_t rank) {
  auto g = n.attrs.find("group");
  if (g == n.attrs.end()) return {};
  auto* name = std::get_if<std::string>(&g->second);
  if (!name) return {};
  auto m = dist.groupOf(*name, rank);
  return m.ok() ? *m : std::vector<int64_t>{};
}

// Index of the node with key `key` on rank `r`, or -1.
int64_t find(const GraphSpec& g, const std::string& key) {
  for (size_t k = 0; k < g.nodes.size(); ++k)
    if (keyOf(g.nodes[k]) == key) return int64_t(k);
  return -1;
}

// `g` with node j scheduled before node i (i < j): the nodes of (i, j] that
// do not depend on node i keep their order and go first, then node i, then
// those that depend on it. Empty when j depends on i.
std::optional<GraphSpec> moveBefore(const GraphSpec& g, size_t i, size_t j) {
  std::set<std::string> tainted(g.nodes[i].outputs.begin(), g.nodes[i].outputs.end());
  std::vector<size_t> free, after;
  for (size_t k = i + 1; k <= j; ++k) {
    const NodeSpec& n = g.nodes[k];
    bool uses = std::any_of(n.inputs.begin(), n.inputs.end(), [&](const std::string& v) { return tainted.count(v); });
    if (uses && k == j) return std::nullopt;
    if (uses) {
      tainted.insert(n.outputs.begin(), n.outputs.end());
      after.push_back(k);
    } else {
      free.push_back(k);
    }
  }
  GraphSpec out = g;
  out.nodes.resize(i);
  for (size_t k : free) out.nodes.push_back(g.nodes[k]);
  out.nodes.push_back(g.nodes[i]);
  for (size_t k : after) out.nodes.push_back(g.nodes[k]);
  for (size_t k = j + 1; k < g.nodes.size(); ++k) out.nodes.push_back(g.nodes[k]);
  return out;
}

void orderSwaps(const ir::Program& dist, const ProgramSpec& base, size_t r, Sink& sink) {
  const GraphSpec& g = base.ranks[r];
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (!blocking(g.nodes[i].op)) continue;
    for (size_t j = i + 1; j < g.nodes.size(); ++j) {
      if (!blocking(g.nodes[j].op)) continue;
      // Another rank in both groups runs A then B: the swap cannot go unnoticed.
      std::vector<int64_t> a = members(dist, g.nodes[i], int64_t(r)), b = members(dist, g.nodes[j], int64_t(r));
      bool witnessed = false;
      for (int64_t s : a) {
        if (s == int64_t(r) || std::find(b.begin(), b.end(), s) == b.end()) continue;
        const GraphSpec& o = base.ranks[size_t(s)];
        int64_t ai = find(o, keyOf(g.nodes[i])), bi = find(o, keyOf(g.nodes[j]));
        witnessed = witnessed || (ai >= 0 && bi > ai);
      }
      if (!witnessed) continue;
      auto moved = moveBefore(g, i, j);
      if (!moved) continue;
      ProgramSpec s = base;
      s.ranks[r] = std::move(*moved);
      sink.add("collective-order-swap", "rank " + std::to_string(r) + ": " + std::string(ir::opName(g.nodes[j].op)) + " '" +
               keyOf(g.nodes[j]) + "' moved before " + std::string(ir::opName(g.nodes[i].op)) + " '" + keyOf(g.nodes[i]) + "'",
               false, s);
    }
  }
}

void groupChanges(const ir::Program& dist, const ProgramSpec& base, size_t r, Sink& sink) {
  const GraphSpec& g = base.ranks[r];
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const NodeSpec& n = g.nodes[i];
    if (!blocking(n.op)) continue;
    std::vector<int64_t> old = members(dist, n, int64_t(r));
    if (old.empty()) continue;
    for (const auto& name : groupNames(base)) {
      auto m = dist.groupOf(name, int64_t(r));
      if (!m.ok() || *m == old) continue;
      ProgramSpec s = base;
      s.ranks[r].nodes[i].attrs["group"] = name;
      sink.add("collective-group-one-rank", "rank " + std::to_string(r) + ": " + std::string(ir::opName(n.op)) + " '" + keyOf(n) +
               "' in group " + name + " (" + std::to_string(m->size()) + " members) while its peers use " +
               std::get<std::string>(n.attrs.at("group")), false, s);
    }
  }
}

}  // namespace

const std::vector<std::string>& deadlockKinds() {
  static const std::vector<std::string> k = {"collective-order-swap", "collective-group-one-rank"};
  return k;
}

void addDeadlockMutants(const ir::Program& dist, Sink& sink) {
  ProgramSpec base = toSpec(dist);
  if (base.ranks.size() < 2) return;
  // The first and the last rank: enough to cover rank 0's special cases
  // (roots, shard 0) and a rank whose peers all come before it.
  for (size_t r : {size_t(0), base.ranks.size() - 1}) {
    orderSwaps(dist, base, r, sink);
    groupChanges(dist, base, r, sink);
  }
}

}  // namespace sp::mutate

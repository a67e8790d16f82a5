#include "ir/program.h"

#include <algorithm>
#include <set>
#include <sstream>

namespace sp::ir {

int64_t Mesh::worldSize() const {
  int64_t n = 1;
  for (const auto& a : axes) n *= a.size;
  return n;
}

std::vector<int64_t> Mesh::coords(int64_t rank) const {
  std::vector<int64_t> c(axes.size());
  for (int64_t i = int64_t(axes.size()) - 1; i >= 0; --i) {
    c[size_t(i)] = rank % axes[size_t(i)].size;
    rank /= axes[size_t(i)].size;
  }
  return c;
}

int64_t Mesh::rankOf(const std::vector<int64_t>& c) const {
  int64_t r = 0;
  for (size_t i = 0; i < axes.size(); ++i) r = r * axes[i].size + c[i];
  return r;
}

const MeshAxis* Mesh::axis(const std::string& name) const {
  for (const auto& a : axes)
    if (a.name == name) return &a;
  return nullptr;
}

namespace {

Result<GroupPartition> partitionOf(const Mesh& mesh,
                                   const std::map<std::string, GroupPartition>& groups,
                                   const std::string& name) {
  if (auto it = groups.find(name); it != groups.end()) return it->second;
  // One or more mesh axes joined by '+'.
  std::set<size_t> sel;
  std::stringstream ss(name);
  std::string part;
  while (std::getline(ss, part, '+')) {
    size_t idx = mesh.axes.size();
    for (size_t i = 0; i < mesh.axes.size(); ++i)
      if (mesh.axes[i].name == part) idx = i;
    if (idx == mesh.axes.size()) {
      std::string known;
      for (const auto& a : mesh.axes) known += (known.empty() ? "" : ", ") + a.name;
      for (const auto& [g, _] : groups) known += (known.empty() ? "" : ", ") + g;
      return makeError("unknown-group", "process group '" + name + "' does not exist (known: " +
                                            (known.empty() ? "none" : known) + ")");
    }
    sel.insert(idx);
  }
  std::map<std::vector<int64_t>, std::vector<int64_t>> byKey;
  int64_t world = mesh.worldSize();
  for (int64_t r = 0; r < world; ++r) {
    auto c = mesh.coords(r);
    for (size_t i : sel) c[i] = -1;
    byKey[c].push_back(r);  // ranks ascend: row-major order over the selected axes
  }
  GroupPartition out;
  for (auto& [_, members] : byKey) out.push_back(std::move(members));
  std::sort(out.begin(), out.end());
  return out;
}

Result<std::vector<int64_t>> memberList(const GroupPartition& p, const std::string& name,
                                        int64_t rank) {
  for (const auto& m : p)
    if (std::find(m.begin(), m.end(), rank) != m.end()) return m;
  return makeError("rank-not-in-group",
                   "rank " + std::to_string(rank) + " is not a member of group '" + name + "'");
}

}  // namespace

Result<GroupPartition> Program::partition(const std::string& name) const {
  return partitionOf(mesh_, groups_, name);
}

namespace {
// The mesh axes a group name joins ("dp+tp"), in mesh order; empty when the
// name is a named partition or not made of axes.
std::vector<size_t> axesOfGroup(const Mesh& mesh, const std::map<std::string, GroupPartition>& groups,
                                const std::string& name) {
  if (groups.count(name)) return {};
  std::vector<size_t> sel;
  std::stringstream ss(name);
  std::string part;
  while (std::getline(ss, part, '+')) {
    bool known = false;
    for (size_t i = 0; i < mesh.axes.size(); ++i)
      if (mesh.axes[i].name == part) {
        if (std::find(sel.begin(), sel.end(), i) == sel.end()) sel.push_back(i);
        known = true;
      }
    if (!known) return {};
  }
  std::sort(sel.begin(), sel.end());
  return sel;
}
}  // namespace

bool isMeshAxisGroup(const Mesh& mesh, const std::map<std::string, GroupPartition>& groups, const std::string& name) {
  return !axesOfGroup(mesh, groups, name).empty();
}

Result<int64_t> peerRank(const Mesh& mesh, const std::map<std::string, GroupPartition>& groups, int64_t rank,
                         const Node& n) {
  int64_t peer = attrInt(n.attrs, "peer");
  auto g = n.attrs.find("group");
  if (g == n.attrs.end() || attrStr(n.attrs, "group").empty()) return peer;
  const std::string& name = attrStr(n.attrs, "group");
  auto bad = [&](int64_t size) {
    return makeError("bad-peer", "peer " + std::to_string(peer) + " is not a position in group '" + name +
                                     "' of " + std::to_string(size) + " ranks");
  };
  auto sel = axesOfGroup(mesh, groups, name);
  if (!sel.empty() && rank >= 0 && rank < mesh.worldSize()) {
    int64_t size = 1;
    for (size_t i : sel) size *= mesh.axes[i].size;
    if (peer < 0 || peer >= size) return bad(size);
    std::vector<int64_t> c = mesh.coords(rank);
    for (size_t k = sel.size(); k-- > 0;) {  // row-major over the group's axes
      c[sel[k]] = peer % mesh.axes[sel[k]].size;
      peer /= mesh.axes[sel[k]].size;
    }
    return mesh.rankOf(c);
  }
  SP_ASSIGN(auto members, groupMembers(mesh, groups, name, rank));
  if (peer < 0 || peer >= int64_t(members.size())) return bad(int64_t(members.size()));
  return members[size_t(peer)];
}

Result<int64_t> Program::peerOf(int64_t rank, const Node& n) const { return peerRank(mesh_, groups_, rank, n); }

Result<int64_t> groupIndex(const Mesh& mesh, const std::map<std::string, GroupPartition>& groups,
                           const std::string& name, int64_t rank) {
  auto sel = axesOfGroup(mesh, groups, name);
  if (!sel.empty() && rank >= 0 && rank < mesh.worldSize()) {
    std::vector<int64_t> c = mesh.coords(rank);
    int64_t idx = 0;
    for (size_t i : sel) idx = idx * mesh.axes[i].size + c[i];
    return idx;
  }
  SP_ASSIGN(auto m, groupMembers(mesh, groups, name, rank));
  return int64_t(std::find(m.begin(), m.end(), rank) - m.begin());
}

Result<std::vector<int64_t>> groupMembers(const Mesh& mesh,
                                          const std::map<std::string, GroupPartition>& groups,
                                          const std::string& name, int64_t rank) {
  // Mesh axes: the members vary the named axes' coordinates of `rank`
  // (row-major, so ranks ascend), without building the whole partition
  // (one lookup per rank of a 1024-rank program).
  if (rank >= 0 && rank < mesh.worldSize()) {
    auto sel = axesOfGroup(mesh, groups, name);
    if (!sel.empty()) {
      std::vector<int64_t> c = mesh.coords(rank);
      for (size_t i : sel) c[i] = 0;
      std::vector<int64_t> out;
      while (true) {
        out.push_back(mesh.rankOf(c));
        size_t k = sel.size();
        while (k > 0 && ++c[sel[k - 1]] == mesh.axes[sel[k - 1]].size) c[sel[--k]] = 0;
        if (k == 0) break;
      }
      return out;
    }
  }
  SP_ASSIGN(auto p, partitionOf(mesh, groups, name));
  return memberList(p, name, rank);
}

Result<std::vector<int64_t>> Program::groupOf(const std::string& name, int64_t rank) const {
  return groupMembers(mesh_, groups_, name, rank);
}

GroupSizeFn groupSizeFor(const Mesh& mesh, const std::map<std::string, GroupPartition>& groups,
                         int64_t rank) {
  return [&mesh, &groups, rank](const std::string& name) -> Result<int64_t> {
    SP_ASSIGN(auto m, groupMembers(mesh, groups, name, rank));
    return int64_t(m.size());
  };
}

ProgramBuilder::ProgramBuilder(int64_t worldSize, Mesh mesh) : worldSize_(worldSize) {
  if (mesh.axes.empty()) mesh.axes.push_back({"world", worldSize});
  prog_.mesh_ = std::move(mesh);
  if (worldSize < 1 || worldSize > (int64_t(1) << 20))
    error_ = makeError("bad-world", "world size " + std::to_string(worldSize) +
                                        " is out of range [1, 2^20]");
  else if (prog_.mesh_.worldSize() != worldSize) {
    std::string axes;
    for (const auto& a : prog_.mesh_.axes) axes += (axes.empty() ? "" : "x") + std::to_string(a.size);
    error_ = makeError("mesh-size", "mesh " + axes + " has " +
                                        std::to_string(prog_.mesh_.worldSize()) +
                                        " ranks but the world size is " + std::to_string(worldSize));
  }
  for (const auto& a : prog_.mesh_.axes)
    if (a.size < 1 && !error_)
      error_ = makeError("mesh-size", "mesh axis '" + a.name + "' has size " + std::to_string(a.size));
  if (!error_) {
    prog_.ranks_.resize(size_t(worldSize));
    have_.assign(size_t(worldSize), false);
  }
}

Status ProgramBuilder::addGroup(const std::string& name, GroupPartition members) {
  if (error_) return *error_;
  if (prog_.groups_.count(name) || prog_.mesh_.axis(name))
    return makeError("duplicate-group", "process group '" + name + "' is declared twice");
  std::set<int64_t> seen;
  for (const auto& m : members) {
    if (m.empty()) return makeError("bad-group", "group '" + name + "' has an empty member list");
    for (int64_t r : m) {
      if (r < 0 || r >= worldSize_)
        return makeError("bad-group", "group '" + name + "' names rank " + std::to_string(r) +
                                          " outside world size " + std::to_string(worldSize_));
      if (!seen.insert(r).second)
        return makeError("bad-group", "group '" + name + "' lists rank " + std::to_string(r) +
                                          " twice");
    }
  }
  prog_.groups_.emplace(name, std::move(members));
  return okStatus();
}

Result<int64_t> ProgramBuilder::groupSize(const std::string& name, int64_t rank) {
  auto sel = axesOfGroup(prog_.mesh_, prog_.groups_, name);
  if (!sel.empty()) {
    int64_t n = 1;
    for (size_t i : sel) n *= prog_.mesh_.axes[i].size;
    return n;
  }
  auto it = prog_.groups_.find(name);
  if (it == prog_.groups_.end()) return groupSizeFor(prog_.mesh_, prog_.groups_, rank)(name);  // the error
  auto [sizes, fresh] = namedSizes_.try_emplace(name);
  if (fresh) {
    sizes->second.assign(size_t(worldSize_), 0);
    for (const auto& m : it->second)
      for (int64_t r : m) sizes->second[size_t(r)] = int64_t(m.size());
  }
  if (sizes->second[size_t(rank)] == 0) return groupSizeFor(prog_.mesh_, prog_.groups_, rank)(name);
  return sizes->second[size_t(rank)];
}

Status ProgramBuilder::setRank(int64_t rank, GraphBuilder graph) { return setRanks({rank}, std::move(graph)); }

Status ProgramBuilder::setRanks(const std::vector<int64_t>& ranks, GraphBuilder graph) {
  if (error_) return *error_;
  for (int64_t rank : ranks) {
    if (rank < 0 || rank >= worldSize_)
      return makeError("bad-rank", "rank " + std::to_string(rank) + " is outside world size " +
                                       std::to_string(worldSize_));
    if (have_[size_t(rank)])
      return makeError("duplicate-rank", "rank " + std::to_string(rank) + " is defined twice");
    have_[size_t(rank)] = true;
  }
  if (ranks.empty()) return okStatus();
  // The group names the first build asks the size of; a later rank shares
  // a build whose sizes for those names are its own.
  std::vector<std::string> asked;
  std::vector<std::pair<std::vector<int64_t>, std::shared_ptr<const Graph>>> built;
  std::optional<GraphBuilder> proto;
  if (ranks.size() > 1) proto = graph;
  auto build = [&](int64_t rank, GraphBuilder gb) -> Result<std::shared_ptr<const Graph>> {
    GroupSizeFn base = groupSizeFor(prog_.mesh_, prog_.groups_, rank);
    GroupSizeFn recording = [&](const std::string& n) -> Result<int64_t> {
      if (std::find(asked.begin(), asked.end(), n) == asked.end()) asked.push_back(n);
      return base(n);
    };
    auto g = std::move(gb).finish(built.empty() ? &recording : &base);
    if (!g) {
      Error e = g.error();
      e.message = "rank " + std::to_string(rank) + ": " + e.message;
      return e;
    }
    return std::make_shared<const Graph>(std::move(*g));
  };
  for (int64_t rank : ranks) {
    std::vector<int64_t> sizes;
    bool known = !built.empty();
    for (const auto& n : asked) {
      auto sz = groupSize(n, rank);
      if (!sz) { known = false; break; }
      sizes.push_back(*sz);
    }
    std::shared_ptr<const Graph> g;
    if (known)
      for (const auto& [s, b] : built)
        if (s == sizes) g = b;
    if (!g) {
      bool first = built.empty();
      SP_ASSIGN(g, build(rank, first ? std::move(graph) : GraphBuilder(*proto)));
      if (first) {
        sizes.clear();
        for (const auto& n : asked) {
          SP_ASSIGN(int64_t sz, groupSize(n, rank));
          sizes.push_back(sz);
        }
      }
      built.emplace_back(sizes, g);
    }
    prog_.ranks_[size_t(rank)] = std::move(g);
  }
  return okStatus();
}

Result<Program> ProgramBuilder::finish() && {
  if (error_) return *error_;
  for (int64_t r = 0; r < worldSize_; ++r)
    if (!have_[size_t(r)])
      return makeError("missing-rank", "rank " + std::to_string(r) + " has no graph");
  std::map<const Graph*, int64_t> classOf;
  prog_.classOf_.assign(size_t(worldSize_), 0);
  for (int64_t r = 0; r < worldSize_; ++r) {
    auto [it, fresh] = classOf.try_emplace(prog_.ranks_[size_t(r)].get(), int64_t(prog_.classRanks_.size()));
    if (fresh) prog_.classRanks_.emplace_back();
    prog_.classRanks_[size_t(it->second)].push_back(r);
    prog_.classOf_[size_t(r)] = it->second;
  }
  // Checks that hold for a whole class once they hold for its first rank
  // (a mesh-axis group contains every rank, with one size) are made there;
  // the rest (peers, named groups) for every rank, in rank order.
  std::vector<std::vector<NodeId>> perRank(prog_.classRanks_.size());
  for (int64_t r = 0; r < worldSize_; ++r) {
    int64_t c = prog_.classOf_[size_t(r)];
    bool first = prog_.classRanks_[size_t(c)][0] == r;
    const Graph& g = *prog_.ranks_[size_t(r)];
    auto check = [&](const Node& n) -> Status {
      std::string where = "rank " + std::to_string(r) + ": " + std::string(opName(n.op)) + " '" + n.name + "'";
      if (n.op == OpKind::Send || n.op == OpKind::Recv) {
        auto resolved = prog_.peerOf(r, n);
        if (!resolved) return makeError(resolved.error().id, where + ": " + resolved.error().message, n.loc.str());
        int64_t peer = *resolved;
        if (peer < 0 || peer >= worldSize_ || peer == r)
          return makeError("bad-peer", where + ": peer " + std::to_string(peer) +
                                           " is not another rank of world size " +
                                           std::to_string(worldSize_),
                           n.loc.str());
        return okStatus();
      }
      auto members = prog_.groupOf(attrStr(n.attrs, "group"), r);
      if (!members) return makeError(members.error().id, where + ": " + members.error().message, n.loc.str());
      if (n.op == OpKind::Broadcast) {
        int64_t root = attrInt(n.attrs, "root");
        if (root < 0 || root >= int64_t(members->size()))
          return makeError("bad-root", where + ": root " + std::to_string(root) +
                                           " is outside the group of size " +
                                           std::to_string(members->size()),
                           n.loc.str());
      }
      return okStatus();
    };
    if (first) {
      for (const Node& n : g.nodes()) {
        if (opInfo(n.op).category != OpCategory::Collective) continue;
        SP_TRY(check(n));
        bool everyRank = n.op != OpKind::Send && n.op != OpKind::Recv &&
                         !axesOfGroup(prog_.mesh_, prog_.groups_, attrStr(n.attrs, "group")).empty();
        if (!everyRank) perRank[size_t(c)].push_back(NodeId(&n - g.nodes().data()));
      }
    } else {
      for (NodeId n : perRank[size_t(c)]) SP_TRY(check(g.node(n)));
    }
  }
  return std::move(prog_);
}

}  // namespace sp::ir

// The global order of blocking communication (collective_order.h): an
// abstract run of every rank over its communication nodes only.
#include "ir/collective_order.h"

#include <algorithm>
#include <deque>
#include <functional>
#include <tuple>

#include "ir/interpreter_impl.h"

namespace sp::ir {
namespace {

using detail::nodeWhere;

// An int or string attribute as text; dims normalized against the input rank.
std::string showAttr(const std::string& name, const AttrValue& v, int64_t rank) {
  if (const auto* i = std::get_if<int64_t>(&v)) {
    int64_t x = *i;
    if ((name == "dim" || name == "split_dim" || name == "concat_dim") && x < 0) x += rank;
    return std::to_string(x);
  }
  if (const auto* s = std::get_if<std::string>(&v)) return *s;
  return "(" + std::string(attrKindName(kindOf(v))) + ")";
}

using Key = std::tuple<int64_t, int64_t, int64_t>;  // (src, dst, tag)

struct RankPos {
  const Graph* g = nullptr;
  std::vector<NodeId> comm;        // communication nodes in execution order
  std::vector<int64_t> peers;      // per comm node: the world rank a send/recv exchanges with
  size_t pos = 0;
  // Group of the collective at pos, once reached: one shared list per group
  // (Orderer::membersOf), so members compare by address.
  const std::vector<int64_t>* members = nullptr;
  static const std::vector<int64_t>& none() { static const std::vector<int64_t> e; return e; }
  const std::vector<int64_t>& group() const { return members ? *members : none(); }
  bool done() const { return pos >= comm.size(); }
  const Node& at() const { return g->node(comm[pos]); }
  int64_t peerAt() const { return peers[pos]; }
};

class Orderer {
 public:
  explicit Orderer(const Program& p) : p_(p) {}

  Result<CollectiveOrder> run() {
    size_t world = size_t(p_.worldSize());
    out_.collOf.resize(world);
    out_.messageOf.resize(world);
    ranks_.resize(world);
    for (size_t r = 0; r < world; ++r) {
      RankPos& st = ranks_[r];
      st.g = &p_.rank(int64_t(r));
      for (NodeId n = 0; n < NodeId(st.g->nodes().size()); ++n) {
        const Node& node = st.g->node(n);
        if (opInfo(node.op).category != OpCategory::Collective) continue;
        int64_t peer = -1;
        if (node.op == OpKind::Send || node.op == OpKind::Recv) {
          auto resolved = p_.peerOf(int64_t(r), node);
          if (!resolved)
            return makeError(resolved.error().id, "rank " + std::to_string(r) + ": " + nodeWhere(node) + ": " +
                                                      resolved.error().message);
          peer = *resolved;
          if (peer < 0 || peer >= int64_t(world))
            return makeError("bad-peer", "rank " + std::to_string(r) + ": " + nodeWhere(node) + ": peer " +
                                             std::to_string(peer) + " is outside the world of " +
                                             std::to_string(world) + " ranks");
        }
        st.comm.push_back(n);
        st.peers.push_back(peer);
      }
      work_.push_back(int64_t(r));
    }
    while (!work_.empty()) {
      int64_t r = work_.front();
      work_.pop_front();
      SP_TRY(advance(r));
    }
    for (const auto& st : ranks_)
      if (!st.done()) return deadlock();
    for (const auto& [key, q] : channels_) {
      if (q.empty()) continue;
      auto [src, dst, tag] = key;
      return makeError("unreceived-send", "rank " + std::to_string(src) + ": " +
                                              nodeWhere(p_.rank(src).node(q.front())) + " to rank " +
                                              std::to_string(dst) + " tag " + std::to_string(tag) +
                                              " was never received");
    }
    for (auto& c : out_.collOf) c.seal();
    for (auto& c : out_.messageOf) c.seal();
    return std::move(out_);
  }

 private:
  Status advance(int64_t r) {
    RankPos& st = ranks_[size_t(r)];
    while (!st.done()) {
      NodeId n = st.comm[st.pos];
      const Node& node = st.at();
      if (node.op == OpKind::Send) {
        Key key{r, st.peerAt(), attrInt(node.attrs, "tag")};
        channels_[key].push_back(n);
        ++st.pos;
        int64_t dst = std::get<1>(key);
        const RankPos& d = ranks_[size_t(dst)];
        if (dst != r && !d.done() && d.at().op == OpKind::Recv &&
            d.peerAt() == r && attrInt(d.at().attrs, "tag") == std::get<2>(key))
          work_.push_back(dst);
        continue;
      }
      if (node.op == OpKind::Recv) {
        int64_t peer = st.peerAt();
        auto& q = channels_[{peer, r, attrInt(node.attrs, "tag")}];
        if (q.empty()) return okStatus();  // blocked
        MessageStep m{peer, r, attrInt(node.attrs, "tag"), q.front(), n};
        q.pop_front();
        int idx = int(out_.messages.size());
        out_.messages.push_back(m);
        out_.messageOf[size_t(peer)].set(m.send, idx);
        out_.messageOf[size_t(r)].set(n, idx);
        ++st.pos;
        continue;
      }
      // Each member counts itself in once when it reaches a collective on
      // the group (a rank blocked there is not counted again), so the last
      // to arrive finds the count complete: linear in the group's size.
      if (st.members) return okStatus();  // already waiting here
      SP_ASSIGN(st.members, membersOf(node, r));
      int64_t& count = arrived_[st.members];
      if (++count < int64_t(st.members->size())) return okStatus();  // blocked
      arrived_.erase(st.members);
      const std::vector<int64_t>& members = *st.members;
      SP_TRY(match(members));
      for (int64_t m : members)
        if (m != r) work_.push_back(m);
    }
    return okStatus();
  }

  // Every member waits at a collective on `members`: they form one step.
  Status match(const std::vector<int64_t>& members) {
    int64_t lead = members[0];
    const RankPos& ls = ranks_[size_t(lead)];
    const Node& ln = ls.at();
    const Graph& lg = *ls.g;
    std::string group = groupStr(attrStr(ln.attrs, "group"), members);
    auto describe = [&](int64_t m) { return "rank " + std::to_string(m) + " is at " + nodeWhere(ranks_[size_t(m)].at()); };
    const TensorType& lt = lg.value(ln.inputs[0]).type;
    CollectiveStep step{ln.op, attrStr(ln.attrs, "group"), members, {}};
    for (int64_t m : members) {
      const RankPos& st = ranks_[size_t(m)];
      const Node& n = st.at();
      if (n.op != ln.op)
        return makeError("collective-mismatch", group + ": " + describe(lead) + " but " + describe(m));
      const TensorType& t = st.g->value(n.inputs[0]).type;
      for (const auto& [name, v] : ln.attrs) {
        if (name == "group") continue;
        auto it = n.attrs.find(name);
        std::string a = showAttr(name, v, int64_t(lt.shape.size()));
        std::string b = it == n.attrs.end() ? "(none)" : showAttr(name, it->second, int64_t(t.shape.size()));
        if (a != b)
          return makeError("collective-mismatch", group + ": " + describe(lead) + " with " + name + " " + a +
                                                      " but " + describe(m) + " with " + name + " " + b);
      }
      if (isConcrete(lt.shape) && isConcrete(t.shape) && !(t == lt))
        return makeError("collective-mismatch", group + ": " + describe(lead) + " with input " + lt.str() +
                                                    " but " + describe(m) + " with input " + t.str());
      step.nodes.push_back(st.comm[st.pos]);
    }
    int idx = int(out_.colls.size());
    for (size_t i = 0; i < members.size(); ++i) {
      RankPos& st = ranks_[size_t(members[i])];
      out_.collOf[size_t(members[i])].set(step.nodes[i], idx);
      ++st.pos;
      st.members = nullptr;
    }
    out_.colls.push_back(std::move(step));
    return okStatus();
  }

  // The ranks a blocked rank waits for.
  std::vector<int64_t> waitsFor(int64_t r) const {
    const RankPos& st = ranks_[size_t(r)];
    const Node& n = st.at();
    if (n.op == OpKind::Recv) return {st.peerAt()};
    std::vector<int64_t> out;
    for (int64_t m : st.group()) {
      const RankPos& o = ranks_[size_t(m)];
      if (m != r && (o.done() || o.members != st.members)) out.push_back(m);
    }
    return out;
  }

  // A cycle in the wait-for graph among blocked ranks, smallest rank first.
  std::vector<int64_t> findCycle() const {
    size_t world = ranks_.size();
    std::vector<int> color(world, 0);  // 0 new, 1 on the path, 2 finished
    std::vector<int64_t> path;
    std::vector<int64_t> cycle;
    std::function<bool(int64_t)> dfs = [&](int64_t r) -> bool {
      color[size_t(r)] = 1;
      path.push_back(r);
      for (int64_t w : waitsFor(r)) {
        if (ranks_[size_t(w)].done()) continue;
        if (color[size_t(w)] == 1) {
          auto it = std::find(path.begin(), path.end(), w);
          cycle.assign(it, path.end());
          return true;
        }
        if (color[size_t(w)] == 0 && dfs(w)) return true;
      }
      path.pop_back();
      color[size_t(r)] = 2;
      return false;
    };
    for (size_t r = 0; r < world; ++r)
      if (!ranks_[r].done() && color[r] == 0 && dfs(int64_t(r))) break;
    if (cycle.empty()) return cycle;
    std::rotate(cycle.begin(), std::min_element(cycle.begin(), cycle.end()), cycle.end());
    return cycle;
  }

  Error deadlock() const {
    std::string msg = "deadlock: ";
    std::vector<int64_t> cycle = findCycle();
    if (!cycle.empty()) {
      msg += "ranks";
      for (int64_t r : cycle) msg += " " + std::to_string(r) + " ->";
      msg += " " + std::to_string(cycle[0]) + " wait for each other in a cycle: ";
    }
    for (size_t r = 0; r < ranks_.size(); ++r) {
      const RankPos& st = ranks_[r];
      msg += r ? "; " : "";
      if (st.done()) {
        msg += "rank " + std::to_string(r) + " finished";
        continue;
      }
      msg += "rank " + std::to_string(r) + " " + waitingAt(st.at(), st.group(), st.at().op == OpKind::Recv ? st.peerAt() : -1);
    }
    return makeError("deadlock", msg);
  }

  const Program& p_;
  std::vector<RankPos> ranks_;
  std::map<const std::vector<int64_t>*, int64_t> arrived_;  // ranks waiting at each group's next collective
  // Each group name's partition, computed once, and each rank's part in it.
  struct Parts {
    GroupPartition parts;
    std::vector<int64_t> partOf;  // by rank; -1: not in any part
  };
  std::map<std::string, Parts> parts_;

  Result<const std::vector<int64_t>*> membersOf(const Node& node, int64_t r) {
    const std::string& name = attrStr(node.attrs, "group");
    auto it = parts_.find(name);
    if (it == parts_.end()) {
      Parts p;
      p.partOf.assign(size_t(p_.worldSize()), -1);
      if (auto part = p_.partition(name); part.ok()) {
        p.parts = std::move(*part);
        for (size_t i = 0; i < p.parts.size(); ++i)
          for (int64_t m : p.parts[i])
            if (m >= 0 && m < p_.worldSize()) p.partOf[size_t(m)] = int64_t(i);
      }
      it = parts_.emplace(name, std::move(p)).first;
    }
    int64_t i = it->second.partOf[size_t(r)];
    if (i < 0) {  // the program's own message: unknown group, or r outside it
      auto m = p_.groupOf(name, r);
      if (!m) return detail::atNode(node, m.error(), "rank " + std::to_string(r) + ": ");
      return makeError("rank-not-in-group", "rank " + std::to_string(r) + " is not in group '" + name + "'");
    }
    return &it->second.parts[size_t(i)];
  }
  std::deque<int64_t> work_;
  std::map<Key, std::deque<NodeId>> channels_;
  CollectiveOrder out_;
};

}  // namespace

Result<CollectiveOrder> orderCollectives(const Program& p) { return Orderer(p).run(); }

void NodeIndex::seal() {
  if (sealed_) return;
  // by node, the last set of each node kept
  std::stable_sort(v_.begin(), v_.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::pair<NodeId, int>> out;
  out.reserve(v_.size());
  for (const auto& e : v_) {
    if (!out.empty() && out.back().first == e.first) out.back() = e;
    else out.push_back(e);
  }
  out.shrink_to_fit();
  v_ = std::move(out);
  sealed_ = true;
}

const int* NodeIndex::find(NodeId n) const {
  SP_ASSERT(sealed_, "NodeIndex read before seal()");
  auto it = std::lower_bound(v_.begin(), v_.end(), n, [](const auto& e, NodeId x) { return e.first < x; });
  return it != v_.end() && it->first == n ? &it->second : nullptr;
}

int NodeIndex::at(NodeId n) const {
  const int* i = find(n);
  SP_ASSERT(i != nullptr, "NodeIndex: node " + std::to_string(n) + " absent");
  return *i;
}

std::string groupStr(const std::string& name, const std::vector<int64_t>& members) {
  std::string out = "group " + name + " [";
  for (size_t i = 0; i < members.size(); ++i) out += (i ? ", " : "") + std::to_string(members[i]);
  return out + "]";
}

std::string waitingAt(const Node& n, const std::vector<int64_t>& members, int64_t peer) {
  std::string msg = "waits at " + detail::nodeWhere(n);
  if (n.op == OpKind::Recv)
    return msg + " from rank " + std::to_string(peer >= 0 ? peer : attrInt(n.attrs, "peer")) + " tag " +
           std::to_string(attrInt(n.attrs, "tag"));
  return msg + " in " + groupStr(attrStr(n.attrs, "group"), members);
}

bool uniformSpmd(const Program& p) {
  if (p.numClasses() != 1) return false;
  for (const Node& n : p.classGraph(0).nodes()) {
    if (opInfo(n.op).category != OpCategory::Collective) continue;
    if (n.op == OpKind::Send || n.op == OpKind::Recv) return false;
    if (!isMeshAxisGroup(p.mesh(), p.namedGroups(), attrStr(n.attrs, "group"))) return false;
  }
  return true;
}

}  // namespace sp::ir

// The rank scheduler: runs every rank of a distributed program in-process,
// single-threaded and deterministic. The matching of collectives and the
// question whether the program can finish at all come from the one module
// that decides them for lowering too (ir/collective_order.h): a program
// that can hang is rejected with the cycle of waiting ranks before any op
// runs. Each round advances every rank (in rank order) until it finishes or
// blocks at a group collective or at a recv whose message has not arrived;
// then every collective step whose members all wait at their node of it
// executes. Sends are buffered and never block.
#include <algorithm>
#include <deque>
#include <tuple>

#include "ir/collective_order.h"
#include "ir/collectives.h"
#include "ir/interpreter.h"
#include "ir/interpreter_impl.h"

namespace sp::ir {
namespace {

using detail::nodeWhere;

struct Message {
  Tensor tensor;
  int64_t src;
  const Node* node;
};

struct RankState {
  const Graph* g = nullptr;
  Bindings b;
  std::vector<Tensor> vals;
  std::vector<int64_t> lastUse;
  std::vector<bool> needed;        // nodes to run (all unless a keep list is given)
  size_t pc = 0;
  size_t reported = SIZE_MAX;      // last node index passed to onNode
  std::vector<int64_t> members;    // group of the collective at pc, when blocked there
  bool done() const { return pc >= g->nodes().size(); }
  const Node& at() const { return g->nodes()[pc]; }
};

class Scheduler {
 public:
  // keep == nullptr: every node runs, and all values (keepAll) or the
  // graph outputs are kept; else rank r runs the cone of (*keep)[r] and of
  // every communication node and keeps only (*keep)[r].
  Scheduler(const Program& p, const RunOptions& opts, bool keepAll,
            const std::vector<std::vector<ValueId>>* keep = nullptr)
      : p_(p), opts_(opts), keepAll_(keepAll && !keep), keep_(keep) {}

  // `given` by value: each rank's map is released once its inputs are
  // prepared, so inputs moved in are freed after their last use.
  Result<std::vector<std::vector<Tensor>>> run(std::vector<TensorMap> given) {
    int64_t world = p_.worldSize();
    SP_ASSIGN(order_, orderCollectives(p_));
    if (!given.empty() && int64_t(given.size()) != world)
      return makeError("bad-given", "inputs given for " + std::to_string(given.size()) +
                                        " ranks but the program has " + std::to_string(world));
    if (keep_ && int64_t(keep_->size()) != world)
      return makeError("bad-keep", "values to keep given for " + std::to_string(keep_->size()) +
                                       " ranks but the program has " + std::to_string(world));
    ranks_.resize(size_t(world));
    static const TensorMap kNone;
    for (int64_t r = 0; r < world; ++r) {
      RankState& st = ranks_[size_t(r)];
      st.g = &p_.rank(r);
      auto in = prepareInputs(*st.g, given.empty() ? kNone : given[size_t(r)], opts_, &st.b);
      if (!in) return prefixed(r, in.error());
      if (!given.empty()) given[size_t(r)].clear();
      st.vals.resize(st.g->values().size());
      for (auto& [name, t] : *in) st.vals[size_t(*st.g->findValue(name))] = std::move(t);
      if (keep_) {
        st.needed = neededNodes(*st.g, (*keep_)[size_t(r)], true);
        st.lastUse = detail::lastUses(*st.g, st.needed, (*keep_)[size_t(r)]);
      } else {
        st.needed.assign(st.g->nodes().size(), true);
        st.lastUse = detail::lastUses(*st.g);
      }
      if (!keepAll_)
        for (size_t v = 0; v < st.vals.size(); ++v)
          if (st.lastUse[v] < 0) st.vals[v] = Tensor();  // inputs nothing reads
      skipUnneeded(st);
    }
    for (;;) {
      bool progress = false;
      for (int64_t r = 0; r < world; ++r) {
        size_t before = ranks_[size_t(r)].pc;
        SP_TRY(advance(r));
        progress = progress || ranks_[size_t(r)].pc != before;
      }
      for (int64_t r = 0; r < world; ++r) {
        SP_ASSIGN(bool ran, tryCollective(r));
        progress = progress || ran;
      }
      bool allDone = true;
      for (const auto& st : ranks_) allDone = allDone && st.done();
      if (allDone) break;
      if (!progress) return deadlock();
    }
    for (const auto& [key, q] : channels_) {
      if (q.empty()) continue;
      const Message& m = q.front();
      return makeError("unreceived-send",
                       "rank " + std::to_string(m.src) + ": " + nodeWhere(*m.node) + " to rank " +
                           std::to_string(std::get<1>(key)) + " tag " +
                           std::to_string(std::get<2>(key)) + " was never received");
    }
    std::vector<std::vector<Tensor>> out;
    for (auto& st : ranks_) out.push_back(std::move(st.vals));
    return out;
  }

 private:
  static Error prefixed(int64_t r, const Error& e) {
    Error out = e;
    out.message = "rank " + std::to_string(r) + ": " + e.message;
    return out;
  }
  static std::string rankStr(int64_t r) { return "rank " + std::to_string(r) + ": "; }

  // The deadline error at rank r's node `where`, with the ops done so far.
  Error timeLimit(int64_t r, const std::string& where) const {
    size_t total = 0;
    for (const auto& st : ranks_) total += size_t(std::count(st.needed.begin(), st.needed.end(), true));
    return detail::timeLimitError("rank " + std::to_string(r) + " " + where, done_, total, " of all ranks");
  }

  void finishNode(RankState& st) {
    ++done_;
    if (!keepAll_) detail::freeAfter(*st.g, st.pc, st.lastUse, st.vals);
    ++st.pc;
    st.members.clear();
    skipUnneeded(st);
  }

  // Moves pc past nodes outside the cone of the kept values.
  static void skipUnneeded(RankState& st) {
    while (!st.done() && !st.needed[st.pc]) ++st.pc;
  }

  Status setOutput(int64_t r, const Node& n, Tensor t) {
    RankState& st = ranks_[size_t(r)];
    auto ok = detail::checkBound(st.g->value(n.outputs[0]), t, st.b);
    if (!ok) return detail::atNode(n, ok.error(), rankStr(r));
    st.vals[size_t(n.outputs[0])] = std::move(t);
    return okStatus();
  }

  // Runs rank r until it finishes or blocks.
  Status advance(int64_t r) {
    RankState& st = ranks_[size_t(r)];
    size_t total = st.g->nodes().size();
    while (!st.done()) {
      const Node& n = st.at();
      if (opts_.onNode && st.reported != st.pc) {
        st.reported = st.pc;
        opts_.onNode(r, st.pc, total);
      }
      if (detail::pastDeadline(opts_.deadline)) return timeLimit(r, nodeWhere(n));
      if (n.op == OpKind::Send) {
        SP_ASSIGN(int64_t peer, p_.peerOf(r, n));
        channels_[{r, peer, attrInt(n.attrs, "tag")}].push_back(
            {st.vals[size_t(n.inputs[0])], r, &n});
        finishNode(st);
        continue;
      }
      if (n.op == OpKind::Recv) {
        SP_ASSIGN(int64_t peer, p_.peerOf(r, n));
        auto& q = channels_[{peer, r, attrInt(n.attrs, "tag")}];
        if (q.empty()) return okStatus();  // blocked
        Message m = std::move(q.front());
        q.pop_front();
        auto want = bindShape(attrDims(n.attrs, "shape"), st.b);
        if (!want) return detail::atNode(n, want.error(), rankStr(r));
        TensorType expect{attrType(n.attrs, "dtype"), shapeOf(*want)};
        if (!(m.tensor.type() == expect))
          return makeError("recv-mismatch",
                           rankStr(r) + nodeWhere(n) + " from rank " + std::to_string(peer) +
                               " tag " + std::to_string(attrInt(n.attrs, "tag")) + " expects " +
                               expect.str() + " but " + nodeWhere(*m.node) + " on rank " +
                               std::to_string(m.src) + " sent " + m.tensor.type().str());
        SP_TRY(setOutput(r, n, std::move(m.tensor)));
        finishNode(st);
        continue;
      }
      if (opInfo(n.op).category == OpCategory::Collective) {
        if (st.members.empty()) {
          auto m = p_.groupOf(attrStr(n.attrs, "group"), r);
          if (!m) return detail::atNode(n, m.error(), rankStr(r));
          st.members = std::move(*m);
        }
        return okStatus();  // blocked until the group executes it
      }
      SP_TRY([&]() -> Status {
        auto s = detail::execNode(*st.g, st.pc, st.vals, st.b,
                                  detail::ExecEnv{keepAll_ ? nullptr : &st.lastUse, opts_.deadline});
        if (!s && s.error().id == "time-limit") return timeLimit(r, s.error().message);
        if (!s) return prefixed(r, s.error());
        return okStatus();
      }());
      finishNode(st);
    }
    return okStatus();
  }

  bool waitsAtGroupCollective(const RankState& st) const {
    return !st.done() && !st.members.empty();
  }

  // Executes the collective step (collective_order.h) rank r waits at, if r
  // leads its group and every member waits at its node of that step. Ops and
  // attributes were matched by orderCollectives; input types are checked here
  // (symbolic shapes are bound only now).
  Result<bool> tryCollective(int64_t r) {
    const RankState& lead = ranks_[size_t(r)];
    if (!waitsAtGroupCollective(lead) || lead.members[0] != r) return false;
    const int* idx = order_.collOf[size_t(r)].find(NodeId(lead.pc));
    SP_ASSERT(idx != nullptr, "collective without a step in the collective order");
    const CollectiveStep& step = order_.colls[size_t(*idx)];
    const std::vector<int64_t> members = step.members;  // copy: finishNode clears RankState::members
    for (size_t i = 0; i < members.size(); ++i) {
      const RankState& st = ranks_[size_t(members[i])];
      if (!waitsAtGroupCollective(st) || NodeId(st.pc) != step.nodes[i]) return false;
    }
    const Node& ln = lead.at();
    std::string group = groupStr(attrStr(ln.attrs, "group"), members);
    auto describe = [&](int64_t m) {
      return "rank " + std::to_string(m) + " is at " + nodeWhere(ranks_[size_t(m)].at());
    };
    std::vector<Tensor> inputs;
    for (int64_t m : members) {
      const RankState& st = ranks_[size_t(m)];
      const Tensor& t = st.vals[size_t(st.at().inputs[0])];
      if (!inputs.empty() && !(t.type() == inputs[0].type()))
        return makeError("collective-mismatch", group + ": " + describe(r) + " with input " +
                                                    inputs[0].type().str() + " but " +
                                                    describe(m) + " with input " + t.type().str());
      inputs.push_back(t);
    }
    auto outs = execCollective(ln.op, ln.attrs, inputs);
    if (!outs) return detail::atNode(ln, outs.error(), group + ": ");
    for (size_t i = 0; i < members.size(); ++i) {
      RankState& st = ranks_[size_t(members[i])];
      SP_TRY(setOutput(members[i], st.at(), std::move((*outs)[i])));
      finishNode(st);
    }
    return true;
  }

  Error deadlock() const {
    std::string msg = "deadlock: ";
    for (size_t r = 0; r < ranks_.size(); ++r) {
      const RankState& st = ranks_[r];
      msg += r ? "; " : "";
      if (st.done()) {
        msg += "rank " + std::to_string(r) + " finished";
        continue;
      }
      auto peer = st.at().op == OpKind::Recv ? p_.peerOf(int64_t(r), st.at()) : Result<int64_t>(int64_t(-1));
      msg += "rank " + std::to_string(r) + " " + waitingAt(st.at(), st.members, peer.ok() ? *peer : -1);
    }
    return makeError("deadlock", msg);
  }

  const Program& p_;
  const RunOptions& opts_;
  bool keepAll_;
  const std::vector<std::vector<ValueId>>* keep_;
  CollectiveOrder order_;
  std::vector<RankState> ranks_;
  size_t done_ = 0;  // nodes finished, all ranks
  std::map<std::tuple<int64_t, int64_t, int64_t>, std::deque<Message>> channels_;  // (src, dst, tag)
};

}  // namespace

Result<std::vector<std::vector<Tensor>>> runProgramAll(const Program& p,
                                                       const std::vector<TensorMap>& given,
                                                       const RunOptions& opts) {
  return Scheduler(p, opts, true).run(given);
}

Result<std::vector<std::vector<Tensor>>> runProgramKeep(const Program& p, std::vector<TensorMap> given,
                                                        const std::vector<std::vector<ValueId>>& keep,
                                                        const RunOptions& opts) {
  for (size_t r = 0; r < keep.size() && int64_t(r) < p.worldSize(); ++r)
    for (ValueId v : keep[r])
      SP_ASSERT(size_t(v) < p.rank(int64_t(r)).values().size(), "runProgramKeep: value id out of range");
  return Scheduler(p, opts, false, &keep).run(std::move(given));
}

Result<std::vector<TensorMap>> runProgram(const Program& p, const std::vector<TensorMap>& given,
                                          const RunOptions& opts) {
  SP_ASSIGN(auto vals, Scheduler(p, opts, false).run(given));
  std::vector<TensorMap> out(vals.size());
  for (size_t r = 0; r < vals.size(); ++r) {
    const Graph& g = p.rank(int64_t(r));
    for (ValueId v : g.outputs()) out[r][g.value(v).name] = vals[r][size_t(v)];
  }
  return out;
}

}  // namespace sp::ir

// Program -> per-rank plans (lower.h).
#include "codegen/lower.h"

#include "codegen/step_order.h"
#include "ir/collective_order.h"

namespace sp::codegen {

ir::Bindings bindProgramSymbols(const ir::Program& p, const ir::Bindings& given, int64_t fallback) {
  ir::Bindings out;
  for (int64_t c = 0; c < p.numClasses(); ++c)
    for (const std::string& s : p.classGraph(c).symbols()) {
      auto it = given.find(s);
      out[s] = it != given.end() ? it->second : fallback;
    }
  return out;
}

namespace {

std::string dataFileName(int64_t rank, const std::string& value) {
  std::string out;
  for (char c : value) out += std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-' ? c : '_';
  return "r" + std::to_string(rank) + "/" + out + ".npy";
}

// The plan of rank r, its pairs left unset (-1).
Result<Plan> lowerRank(const ir::Program& p, int64_t r, const ir::Bindings& b, std::vector<int>& stepOfNode) {
  const ir::Graph& g = p.rank(r);
  Plan plan;
  plan.program = p.rank(0).name();
  plan.rank = r;
  plan.world = p.worldSize();
  plan.mesh = p.mesh();
  plan.groups = p.namedGroups();
  plan.bindings = b;
  std::vector<int> bufOf(g.values().size(), -1);
  auto addBuffer = [&](ir::ValueId v, BufferKind kind) -> Status {
    const ir::Value& val = g.value(v);
    PlanBuffer buf{val.name, val.type, kind, 0, 0, {}, {}};
    auto bytes = byteSize(val.type, b);
    if (!bytes) return makeError(bytes.error().id, "rank " + std::to_string(r) + ": value '" + val.name + "': " + bytes.error().message);
    buf.bytes = *bytes;
    if (const ir::Tensor* data = g.paramData(v)) {
      buf.data = *data;
      buf.dataFile = dataFileName(r, val.name);
    }
    bufOf[size_t(v)] = int(plan.buffers.size());
    plan.buffers.push_back(std::move(buf));
    return okStatus();
  };
  for (ir::ValueId v : g.inputs()) SP_TRY(addBuffer(v, BufferKind::Input));
  for (ir::ValueId v : g.params()) SP_TRY(addBuffer(v, BufferKind::Param));

  // Vector clocks of the two streams, as StepOrder computes them, to place
  // the waits: a step needs a wait when it reads a buffer written on the
  // other stream by a step its own stream does not know has finished.
  int known[2][2] = {{0, 0}, {0, 0}};
  std::vector<std::pair<int, int>> writtenAt(plan.buffers.size() + g.values().size(), {-1, -1});  // (stream, index)
  int issued[2] = {0, 0};
  stepOfNode.assign(g.nodes().size(), -1);
  for (size_t k = 0; k < g.nodes().size(); ++k) {
    const ir::Node& n = g.nodes()[k];
    PlanStep s;
    bool comm = ir::opInfo(n.op).category == ir::OpCategory::Collective;
    s.kind = n.op == ir::OpKind::Send ? StepKind::Send
             : n.op == ir::OpKind::Recv ? StepKind::Recv
             : comm ? StepKind::Collective : StepKind::Kernel;
    s.stream = comm ? kCommStream : kComputeStream;
    s.op = n.op;
    s.name = n.name;
    s.attrs = n.attrs;
    s.loc = n.loc;
    s.loc.col = 0;  // a text IR position prints as its line: the plan names its source
    if (s.kind == StepKind::Send || s.kind == StepKind::Recv) {
      // A plan names world ranks: a peer given by its position in a group
      // is resolved here.
      auto peer = p.peerOf(r, n);
      if (!peer) return makeError(peer.error().id, "rank " + std::to_string(r) + ": " + n.name + ": " + peer.error().message);
      s.attrs["peer"] = *peer;
      s.attrs.erase("group");
    }
    if (s.kind == StepKind::Collective) {
      auto m = p.groupOf(ir::attrStr(n.attrs, "group"), r);
      if (!m) return makeError(m.error().id, "rank " + std::to_string(r) + ": " + n.name + ": " + m.error().message);
      s.members = std::move(*m);
    }
    int st = s.stream, other = 1 - st;
    for (ir::ValueId v : n.inputs) {
      int buf = bufOf[size_t(v)];
      s.inputs.push_back(buf);
      auto [ws, wi] = writtenAt[size_t(buf)];
      if (ws == other && known[st][other] <= wi) {
        PlanStep w;
        w.kind = StepKind::Wait;
        w.stream = st;
        w.waitFor = other;
        plan.steps.push_back(std::move(w));
        for (int t = 0; t < 2; ++t) known[st][t] = std::max(known[st][t], known[other][t]);
        ++issued[st];
        known[st][st] = issued[st];
      }
    }
    for (ir::ValueId v : n.outputs) {
      SP_TRY(addBuffer(v, BufferKind::Temp));
      s.outputs.push_back(bufOf[size_t(v)]);
      writtenAt[size_t(bufOf[size_t(v)])] = {st, issued[st]};
    }
    stepOfNode[k] = int(plan.steps.size());
    plan.steps.push_back(std::move(s));
    ++issued[st];
    known[st][st] = issued[st];
  }
  for (ir::ValueId v : g.outputs()) plan.outputs.push_back(bufOf[size_t(v)]);
  planMemory(plan);
  return plan;
}

}  // namespace

Result<std::vector<Plan>> lowerProgram(const ir::Program& p, const ir::Bindings& bindings) {
  SP_ASSIGN(ir::CollectiveOrder order, ir::orderCollectives(p));
  std::vector<Plan> plans;
  std::vector<std::vector<int>> stepOf(size_t(p.worldSize()));
  for (int64_t r = 0; r < p.worldSize(); ++r) {
    SP_ASSIGN(Plan plan, lowerRank(p, r, bindings, stepOf[size_t(r)]));
    plans.push_back(std::move(plan));
  }
  for (const ir::MessageStep& m : order.messages) {
    int send = stepOf[size_t(m.src)][size_t(m.send)], recv = stepOf[size_t(m.dst)][size_t(m.recv)];
    PlanStep& s = plans[size_t(m.src)].steps[size_t(send)];
    PlanStep& v = plans[size_t(m.dst)].steps[size_t(recv)];
    s.pairRank = int(m.dst);
    s.pairStep = recv;
    v.pairRank = int(m.src);
    v.pairStep = send;
  }
  return plans;
}

}  // namespace sp::codegen

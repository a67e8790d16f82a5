// Plans read back into a program, and the checks across ranks: collective
// order (ir/collective_order, the one module that decides it), communicators
// and send/recv pairs.
#include <map>

#include "codegen/plan.h"
#include "ir/collective_order.h"

namespace sp::codegen {

namespace {

ir::SourceLoc stepLoc(const Plan& p, size_t i) {
  ir::SourceLoc loc = p.steps[i].loc;
  std::string at = p.stepWhere(i);
  loc.detail = loc.detail.empty() ? at : at + ", " + loc.detail;
  loc.col = 0;
  return loc;
}

Result<ir::GraphBuilder> rankGraph(const Plan& p) {
  ir::GraphBuilder gb(p.program);
  for (const PlanBuffer& b : p.buffers) {
    if (b.kind == BufferKind::Input) SP_TRY(gb.addInput(b.name, b.type));
    if (b.kind == BufferKind::Param) SP_TRY(gb.addParam(b.name, b.type, b.data));
  }
  for (size_t i = 0; i < p.steps.size(); ++i) {
    const PlanStep& s = p.steps[i];
    if (s.kind == StepKind::Wait) continue;
    std::vector<std::string> ins, outs;
    std::vector<std::optional<ir::TensorType>> declared;
    for (int b : s.inputs) ins.push_back(p.buffers[size_t(b)].name);
    for (int b : s.outputs) {
      outs.push_back(p.buffers[size_t(b)].name);
      declared.push_back(p.buffers[size_t(b)].type);
    }
    SP_TRY(gb.addNode(s.op, ins, outs, s.attrs, stepLoc(p, i), s.name, declared));
  }
  for (int o : p.outputs) SP_TRY(gb.addOutput(p.buffers[size_t(o)].name));
  return gb;
}

std::string planWhere(const Plan& p) { return p.file.empty() ? "rank " + std::to_string(p.rank) : p.file; }

}  // namespace

Result<ir::Program> toProgram(const std::vector<Plan>& plans) {
  if (plans.empty()) return makeError("bad-plan", "no plans");
  const Plan& first = plans[0];
  if (int64_t(plans.size()) != first.world)
    return makeError("bad-plan", std::to_string(plans.size()) + " plans for a world of " + std::to_string(first.world),
                     planWhere(first));
  ir::ProgramBuilder pb(first.world, first.mesh);
  for (const auto& [name, part] : first.groups) SP_TRY(pb.addGroup(name, part));
  for (size_t r = 0; r < plans.size(); ++r) {
    const Plan& p = plans[r];
    auto differs = [&](const std::string& what) {
      return makeError("bad-plan", what + " differs from rank 0's plan", planWhere(p));
    };
    if (p.rank != int64_t(r)) return makeError("bad-plan", "plan " + std::to_string(r) + " is for rank " + std::to_string(p.rank), planWhere(p));
    if (p.world != first.world) return differs("world");
    if (p.program != first.program) return differs("program name");
    if (p.bindings != first.bindings) return differs("bindings");
    if (p.groups != first.groups) return differs("groups");
    if (p.mesh.axes.size() != first.mesh.axes.size()) return differs("mesh");
    for (size_t a = 0; a < p.mesh.axes.size(); ++a)
      if (p.mesh.axes[a].name != first.mesh.axes[a].name || p.mesh.axes[a].size != first.mesh.axes[a].size)
        return differs("mesh");
    auto gb = rankGraph(p);
    if (!gb) return makeError(gb.error().id, gb.error().message, gb.error().location.empty() ? planWhere(p) : gb.error().location);
    SP_TRY(pb.setRank(int64_t(r), std::move(*gb)));
  }
  return std::move(pb).finish();
}

Result<ir::Program> checkPlans(const std::vector<Plan>& plans) {
  for (const Plan& p : plans) SP_TRY(checkPlan(p));
  SP_ASSIGN(ir::Program prog, toProgram(plans));
  // Node k of rank r is its k-th non-wait step (issue order is a dependency
  // order, and the builder's sort is stable).
  std::vector<std::vector<int>> stepOf(plans.size());
  for (size_t r = 0; r < plans.size(); ++r) {
    for (size_t i = 0; i < plans[r].steps.size(); ++i)
      if (plans[r].steps[i].kind != StepKind::Wait) stepOf[r].push_back(int(i));
    const ir::Graph& g = prog.rank(int64_t(r));
    SP_ASSERT(stepOf[r].size() == g.nodes().size(), "one node per step");
    for (size_t k = 0; k < g.nodes().size(); ++k)
      SP_ASSERT(g.nodes()[k].name == plans[r].steps[size_t(stepOf[r][k])].name, "nodes in issue order");
  }
  auto order = ir::orderCollectives(prog);
  if (!order) {
    Error e = order.error();
    if (e.id == "deadlock") e.message = "the plans would hang: " + e.message;
    return e;
  }
  for (const ir::CollectiveStep& c : order->colls)
    for (size_t i = 0; i < c.members.size(); ++i) {
      size_t r = size_t(c.members[i]);
      int step = stepOf[r][size_t(c.nodes[i])];
      const PlanStep& s = plans[r].steps[size_t(step)];
      if (s.members != c.members) {
        std::string have, want;
        for (int64_t m : s.members) have += (have.empty() ? "" : ", ") + std::to_string(m);
        for (int64_t m : c.members) want += (want.empty() ? "" : ", ") + std::to_string(m);
        return makeError("bad-plan", "communicator of " + std::string(ir::opName(s.op)) + " lists ranks [" + have +
                                         "] but group " + ir::attrStr(s.attrs, "group") + " of rank " +
                                         std::to_string(r) + " is [" + want + "]",
                         plans[r].stepWhere(size_t(step)));
      }
    }
  for (const ir::MessageStep& m : order->messages) {
    int send = stepOf[size_t(m.src)][size_t(m.send)], recv = stepOf[size_t(m.dst)][size_t(m.recv)];
    const PlanStep& s = plans[size_t(m.src)].steps[size_t(send)];
    const PlanStep& v = plans[size_t(m.dst)].steps[size_t(recv)];
    auto pairErr = [&](const Plan& p, int at, int64_t peer, int peerStep) {
      return makeError("bad-plan", "pairs with r" + std::to_string(peer) + " step " + std::to_string(peerStep) +
                                       " but the transfer it matches in the collective order is with r" +
                                       std::to_string(p.rank == m.src ? m.dst : m.src) + " step " +
                                       std::to_string(p.rank == m.src ? recv : send),
                       p.stepWhere(size_t(at)));
    };
    if (s.pairRank != m.dst || s.pairStep != recv) return pairErr(plans[size_t(m.src)], send, s.pairRank, s.pairStep);
    if (v.pairRank != m.src || v.pairStep != send) return pairErr(plans[size_t(m.dst)], recv, v.pairRank, v.pairStep);
  }
  return prog;
}

}  // namespace sp::codegen

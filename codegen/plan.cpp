// Plan basics, the text printer and the structural check.
#include "codegen/plan.h"

#include <algorithm>

#include "codegen/step_order.h"
#include "ir/text.h"
#include "ir/text_lexer.h"

namespace sp::codegen {

std::string_view bufferKindName(BufferKind k) {
  switch (k) {
    case BufferKind::Input: return "input";
    case BufferKind::Param: return "param";
    case BufferKind::Temp: return "temp";
  }
  return "?";
}

std::string_view stepKindName(StepKind k) {
  switch (k) {
    case StepKind::Kernel: return "kernel";
    case StepKind::Collective: return "collective";
    case StepKind::Send: return "send";
    case StepKind::Recv: return "recv";
    case StepKind::Wait: return "wait";
  }
  return "?";
}

std::optional<int> Plan::findBuffer(const std::string& name) const {
  for (size_t i = 0; i < buffers.size(); ++i)
    if (buffers[i].name == name) return int(i);
  return std::nullopt;
}

std::string Plan::stepWhere(size_t step) const {
  std::string at = "step " + std::to_string(step);
  int line = step < steps.size() ? steps[step].line : 0;
  if (!file.empty()) return file + (line > 0 ? ":" + std::to_string(line) : "") + " " + at;
  return "rank " + std::to_string(rank) + " " + at;
}

Result<std::vector<int64_t>> concreteDims(const ir::TensorType& type, const ir::Bindings& b) {
  SP_ASSIGN(auto dims, ir::bindShape(type.shape, b));
  SP_TRY(ir::checkType({type.dtype, ir::shapeOf(dims)}, "buffer"));
  return dims;
}

Result<int64_t> byteSize(const ir::TensorType& type, const ir::Bindings& b) {
  SP_ASSIGN(auto dims, concreteDims(type, b));
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n * int64_t(ir::dtypeSize(type.dtype));
}

namespace {

std::string nameText(const std::string& n) { return ir::text::isIdentifier(n) ? n : ir::text::quote(n); }

std::string rankList(const std::vector<int64_t>& rs) {
  std::string out = "[";
  for (size_t i = 0; i < rs.size(); ++i) out += (i ? ", " : "") + std::to_string(rs[i]);
  return out + "]";
}

}  // namespace

std::string printPlanText(const Plan& p) {
  std::string out = "plan " + ir::text::quote(p.program) + " rank " + std::to_string(p.rank) + " of " +
                    std::to_string(p.world) + " version " + std::to_string(kPlanVersion) + " {\n";
  out += "  mesh [";
  for (size_t i = 0; i < p.mesh.axes.size(); ++i)
    out += (i ? ", " : "") + nameText(p.mesh.axes[i].name) + " = " + std::to_string(p.mesh.axes[i].size);
  out += "]\n";
  for (const auto& [name, part] : p.groups) {
    out += "  group " + nameText(name) + " = [";
    for (size_t i = 0; i < part.size(); ++i) out += (i ? ", " : "") + rankList(part[i]);
    out += "]\n";
  }
  for (const auto& [sym, v] : p.bindings) out += "  bind " + nameText(sym) + " = " + std::to_string(v) + "\n";
  out += "  arena " + std::to_string(p.arenaBytes) + "\n";
  out += "  streams " + std::to_string(p.streams) + "\n";
  for (const PlanBuffer& b : p.buffers)
    out += "  buffer " + ir::formatValueName(b.name) + ": " + ir::formatType(b.type) + " " +
           std::string(bufferKindName(b.kind)) + " at " + std::to_string(b.offset) + " size " +
           std::to_string(b.bytes) + (b.dataFile.empty() ? "" : " data " + ir::text::quote(b.dataFile)) + "\n";
  auto names = [&](const std::vector<int>& bs) {
    std::string s;
    for (size_t i = 0; i < bs.size(); ++i) s += (i ? ", " : "") + ir::formatValueName(p.buffers[size_t(bs[i])].name);
    return s;
  };
  for (size_t i = 0; i < p.steps.size(); ++i) {
    const PlanStep& s = p.steps[i];
    out += "  step " + std::to_string(i) + " " + std::string(stepKindName(s.kind)) + " s" + std::to_string(s.stream);
    if (s.kind == StepKind::Wait) {
      out += " for s" + std::to_string(s.waitFor) + "\n";
      continue;
    }
    out += " " + ir::text::quote(s.name) + " ";
    if (!s.outputs.empty()) out += names(s.outputs) + " = ";
    out += std::string(ir::opName(s.op)) + "(" + names(s.inputs) + ")";
    ir::AttrMap attrs = s.attrs;
    if (s.kind == StepKind::Collective) {
      auto g = attrs.find("group");
      out += " comm " + nameText(g == attrs.end() ? "" : std::get<std::string>(g->second)) + " " + rankList(s.members);
      if (g != attrs.end()) attrs.erase(g);
    }
    out += ir::formatAttrs(s.op, attrs);
    if (s.kind == StepKind::Send || s.kind == StepKind::Recv)
      out += " pair r" + std::to_string(s.pairRank) + " step " + std::to_string(s.pairStep);
    std::string loc = ir::formatLoc(s.loc);
    if (!loc.empty()) out += " " + loc;
    out += "\n";
  }
  for (int o : p.outputs) out += "  output " + ir::formatValueName(p.buffers[size_t(o)].name) + "\n";
  return out + "}\n";
}

namespace {

Error stepError(const Plan& p, size_t i, const std::string& msg) {
  return makeError("bad-plan", msg, p.stepWhere(i));
}

StepKind kindForOp(ir::OpKind op) {
  if (op == ir::OpKind::Send) return StepKind::Send;
  if (op == ir::OpKind::Recv) return StepKind::Recv;
  return ir::opInfo(op).category == ir::OpCategory::Collective ? StepKind::Collective : StepKind::Kernel;
}

Status checkBuffers(const Plan& p) {
  std::string where = p.file.empty() ? "rank " + std::to_string(p.rank) : p.file;
  if (p.world < 1 || p.rank < 0 || p.rank >= p.world)
    return makeError("bad-plan", "rank " + std::to_string(p.rank) + " is outside a world of " + std::to_string(p.world), where);
  int64_t meshRanks = 1;
  for (const auto& a : p.mesh.axes) {
    if (a.size < 1 || a.size > p.world || meshRanks > p.world) {
      meshRanks = -1;
      break;
    }
    meshRanks *= a.size;  // at most 2^20 * 2^20
  }
  if (p.mesh.axes.empty() || meshRanks != p.world)
    return makeError("bad-plan", "the mesh must have at least one axis and " + std::to_string(p.world) +
                                     " ranks, like the world", where);
  if (p.streams != 2)
    return makeError("bad-plan", "plans have 2 streams (0 compute, 1 communication), got " + std::to_string(p.streams), where);
  for (size_t i = 0; i < p.buffers.size(); ++i) {
    const PlanBuffer& b = p.buffers[i];
    std::string bw = "buffer " + ir::formatValueName(b.name);
    if (p.findBuffer(b.name) != std::optional<int>(int(i)))
      return makeError("bad-plan", bw + " is declared twice", where);
    auto bytes = byteSize(b.type, p.bindings);
    if (!bytes) return makeError("bad-plan", bw + ": " + bytes.error().message, where);
    if (*bytes != b.bytes)
      return makeError("bad-plan", bw + ": size " + std::to_string(b.bytes) + " but " + ir::formatType(b.type) +
                                       " takes " + std::to_string(*bytes) + " bytes", where);
    if (b.offset < 0 || b.offset % kArenaAlign != 0 || b.offset > p.arenaBytes || b.bytes > p.arenaBytes - b.offset)
      return makeError("bad-plan", bw + ": bytes [" + std::to_string(b.offset) + ", " + std::to_string(b.offset + b.bytes) +
                                       ") are not " + std::to_string(kArenaAlign) + "-aligned inside the arena of " +
                                       std::to_string(p.arenaBytes), where);
  }
  return okStatus();
}

Status checkSteps(const Plan& p) {
  std::vector<int> writers(p.buffers.size(), 0);
  for (size_t i = 0; i < p.steps.size(); ++i) {
    const PlanStep& s = p.steps[i];
    if (s.stream < 0 || s.stream >= p.streams) return stepError(p, i, "stream s" + std::to_string(s.stream) + " does not exist");
    if (s.kind == StepKind::Wait) {
      if (s.waitFor < 0 || s.waitFor >= p.streams || s.waitFor == s.stream)
        return stepError(p, i, "wait s" + std::to_string(s.stream) + " for s" + std::to_string(s.waitFor) +
                                   ": the stream waited for must be another existing stream");
      continue;
    }
    if (kindForOp(s.op) != s.kind)
      return stepError(p, i, std::string(stepKindName(s.kind)) + " step runs op " + std::string(ir::opName(s.op)) +
                                 ", a " + std::string(stepKindName(kindForOp(s.op))));
    int want = s.kind == StepKind::Kernel ? kComputeStream : kCommStream;
    if (s.stream != want)
      return stepError(p, i, std::string(stepKindName(s.kind)) + " steps run on stream s" + std::to_string(want));
    for (int b : s.inputs)
      if (b < 0 || size_t(b) >= p.buffers.size()) return stepError(p, i, "operand is not a buffer");
    for (int b : s.outputs) {
      if (b < 0 || size_t(b) >= p.buffers.size()) return stepError(p, i, "result is not a buffer");
      const PlanBuffer& buf = p.buffers[size_t(b)];
      if (buf.kind != BufferKind::Temp)
        return stepError(p, i, "writes " + std::string(bufferKindName(buf.kind)) + " buffer " + ir::formatValueName(buf.name));
      if (++writers[size_t(b)] > 1) return stepError(p, i, "writes buffer " + ir::formatValueName(buf.name) + " a second time");
    }
  }
  for (size_t b = 0; b < p.buffers.size(); ++b)
    if (p.buffers[b].kind == BufferKind::Temp && writers[b] == 0)
      return makeError("bad-plan", "temp buffer " + ir::formatValueName(p.buffers[b].name) + " is never written",
                       p.file.empty() ? "rank " + std::to_string(p.rank) : p.file);
  return okStatus();
}

// Reads after the write, and arena bytes shared only by buffers whose
// accesses are ordered.
Status checkOrder(const Plan& p, const std::vector<BufferAccess>& acc) {
  StepOrder order(p);
  for (size_t b = 0; b < p.buffers.size(); ++b) {
    int w = acc[b].writer;
    for (int r : acc[b].readers)
      if (w >= 0 && !order.before(size_t(w), size_t(r)))
        return stepError(p, size_t(r), "reads " + ir::formatValueName(p.buffers[b].name) + " before " +
                                           p.stepWhere(size_t(w)) + " that writes it is known to have finished (a stream wait is missing)");
  }
  std::vector<bool> pinned = pinnedBuffers(p);
  std::vector<size_t> byOffset;
  for (size_t b = 0; b < p.buffers.size(); ++b)
    if (p.buffers[b].bytes > 0) byOffset.push_back(b);
  std::sort(byOffset.begin(), byOffset.end(),
            [&](size_t a, size_t b) { return p.buffers[a].offset < p.buffers[b].offset; });
  for (size_t i = 0; i < byOffset.size(); ++i) {
    const PlanBuffer& x = p.buffers[byOffset[i]];
    for (size_t k = i + 1; k < byOffset.size() && p.buffers[byOffset[k]].offset < x.offset + x.bytes; ++k) {
      size_t a = byOffset[i], b = byOffset[k];
      // The one written later must be written after every access to the other.
      if (acc[a].writer > acc[b].writer) std::swap(a, b);
      int w = acc[b].writer;
      if (w >= 0 && releasedFor(order, acc, pinned, int(a), w)) continue;
      return makeError("bad-plan", "buffers " + ir::formatValueName(p.buffers[a].name) + " and " +
                                       ir::formatValueName(p.buffers[b].name) + " share arena bytes but " +
                                       (w < 0 ? std::string("both are inputs or params")
                                              : p.stepWhere(size_t(w)) + " may write one while the other is in use"),
                       p.file.empty() ? "rank " + std::to_string(p.rank) : p.file);
    }
  }
  return okStatus();
}

}  // namespace

Status checkPlan(const Plan& p) {
  SP_TRY(checkBuffers(p));
  for (int o : p.outputs)
    if (o < 0 || size_t(o) >= p.buffers.size()) return makeError("bad-plan", "output is not a buffer", p.file);
  SP_TRY(checkSteps(p));  // indices first: bufferAccesses relies on them
  return checkOrder(p, bufferAccesses(p));
}

}  // namespace sp::codegen

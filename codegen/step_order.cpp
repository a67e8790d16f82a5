// Happens-before over streams and the first-fit arena plan.
#include "codegen/step_order.h"

#include <algorithm>

namespace sp::codegen {

StepOrder::StepOrder(const Plan& p) {
  size_t ns = size_t(std::max(p.streams, 1));
  std::vector<std::vector<int>> known(ns, std::vector<int>(ns, 0));  // per stream: its vector clock
  std::vector<int> issued(ns, 0);
  for (const PlanStep& s : p.steps) {
    size_t st = size_t(s.stream);
    if (s.kind == StepKind::Wait) {
      // Everything stream waitFor will have finished once its last issued
      // step is done is known to this stream from here on.
      const auto& other = known[size_t(s.waitFor)];
      for (size_t t = 0; t < ns; ++t) known[st][t] = std::max(known[st][t], other[t]);
    }
    start_.push_back(known[st]);
    issued_.push_back(issued);
    index_.push_back(issued[st]);
    stream_.push_back(s.stream);
    ++issued[st];
    known[st][st] = issued[st];
  }
}

bool StepOrder::before(size_t a, size_t b) const {
  if (a == b) return false;
  return start_[b][size_t(stream_[a])] > index_[a];
}

std::vector<BufferAccess> bufferAccesses(const Plan& p) {
  std::vector<BufferAccess> acc(p.buffers.size());
  for (size_t i = 0; i < p.steps.size(); ++i) {
    for (int b : p.steps[i].inputs) acc[size_t(b)].readers.push_back(int(i));
    for (int b : p.steps[i].outputs) acc[size_t(b)].writer = int(i);
  }
  return acc;
}

std::vector<bool> pinnedBuffers(const Plan& p) {
  std::vector<bool> pinned(p.buffers.size(), false);
  for (size_t b = 0; b < p.buffers.size(); ++b) pinned[b] = p.buffers[b].kind != BufferKind::Temp;
  for (int o : p.outputs) pinned[size_t(o)] = true;
  return pinned;
}

bool releasedFor(const StepOrder& order, const std::vector<BufferAccess>& acc, const std::vector<bool>& pinned,
                 int x, int j) {
  if (pinned[size_t(x)]) return false;
  const BufferAccess& a = acc[size_t(x)];
  if (a.writer >= 0 && !order.before(size_t(a.writer), size_t(j))) return false;
  for (int r : a.readers)
    if (!order.before(size_t(r), size_t(j))) return false;
  return true;
}

namespace {

int64_t alignUp(int64_t n) { return (n + kArenaAlign - 1) / kArenaAlign * kArenaAlign; }

// Lowest aligned offset where `bytes` fit between the busy ranges.
int64_t firstFit(std::vector<std::pair<int64_t, int64_t>> busy, int64_t bytes) {
  std::sort(busy.begin(), busy.end());
  int64_t at = 0;
  for (const auto& [off, size] : busy) {
    if (off >= at + bytes) break;
    at = std::max(at, alignUp(off + size));
  }
  return at;
}

}  // namespace

void planMemory(Plan& p) {
  StepOrder order(p);
  auto acc = bufferAccesses(p);
  std::vector<bool> pinned = pinnedBuffers(p);
  std::vector<int> placed;  // buffers with an offset, in placement order
  int64_t arena = 0;
  auto place = [&](int b, int step) {
    std::vector<std::pair<int64_t, int64_t>> busy;
    for (int x : placed)
      if (p.buffers[size_t(x)].bytes > 0 && (step < 0 || !releasedFor(order, acc, pinned, x, step)))
        busy.push_back({p.buffers[size_t(x)].offset, p.buffers[size_t(x)].bytes});
    PlanBuffer& buf = p.buffers[size_t(b)];
    buf.offset = buf.bytes > 0 ? firstFit(std::move(busy), buf.bytes) : 0;
    arena = std::max(arena, buf.offset + buf.bytes);
    placed.push_back(b);
  };
  for (size_t b = 0; b < p.buffers.size(); ++b)
    if (p.buffers[b].kind != BufferKind::Temp) place(int(b), -1);
  for (size_t i = 0; i < p.steps.size(); ++i)
    for (int b : p.steps[i].outputs) place(b, int(i));
  p.arenaBytes = std::max<int64_t>(alignUp(arena), kArenaAlign);
}

}  // namespace sp::codegen

#pragma once
// Happens-before between the steps of one plan, and the arena memory plan
// that rests on it. Streams run their steps in issue order; `wait s for t`
// makes stream s wait for every step issued on t so far. Step a happens
// before step b when b cannot start before a has finished on every legal
// schedule: same stream and earlier, or through a chain of waits (vector
// clocks over streams).
#include <vector>

#include "codegen/plan.h"

namespace sp::codegen {

class StepOrder {
 public:
  // Streams and wait targets must be in [0, p.streams) (checkPlan checks).
  explicit StepOrder(const Plan& p);
  // Whether step a finishes before step b starts; false for a == b.
  bool before(size_t a, size_t b) const;
  // Steps issued on `stream` before step i (i's index on its stream when i
  // runs there): what a wait at step i for `stream` waits for.
  int issuedBefore(size_t i, int stream) const { return issued_[i][size_t(stream)]; }

 private:
  std::vector<std::vector<int>> start_;   // per step: per stream, steps known finished at its start
  std::vector<std::vector<int>> issued_;  // per step: per stream, steps issued before it
  std::vector<int> index_;                // per step: its index on its stream
  std::vector<int> stream_;
};

// Every access of each buffer: its writer (-1 for inputs and params, written
// before the first step) and its readers, by step index.
struct BufferAccess {
  int writer = -1;
  std::vector<int> readers;
};
std::vector<BufferAccess> bufferAccesses(const Plan& p);

// Buffers whose bytes are never reused: inputs and params (weights stay in
// place from one run of a plan to the next) and graph outputs.
std::vector<bool> pinnedBuffers(const Plan& p);

// Whether buffer x's bytes may be written by step j: x is not pinned and
// every access to x happens before j.
bool releasedFor(const StepOrder& order, const std::vector<BufferAccess>& acc, const std::vector<bool>& pinned,
                 int x, int j);

// Assigns every buffer an aligned arena offset, first fit in issue order:
// inputs and params first, then each step's outputs, reusing the bytes of
// temps released for that step. Sets PlanBuffer::offset and
// Plan::arenaBytes. Buffer sizes and steps must be set.
void planMemory(Plan& p);

}  // namespace sp::codegen

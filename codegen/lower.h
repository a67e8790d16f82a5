#pragma once
// Lowering a distributed program to per-rank plans: one buffer per value,
// one step per node in graph order (kernels on stream 0; collectives, sends
// and recvs on stream 1, in the one collective order), a stream wait
// wherever a step reads what the other stream wrote and does not yet know
// finished, send/recv pairs from ir/collective_order, and the arena plan of
// codegen/step_order.h. Untrusted: codegen checks what it emits.
#include <vector>

#include "codegen/plan.h"

namespace sp::codegen {

// Symbols of every rank's inputs and params: the value in `given`, else
// `fallback` (the interpreter's default for unbound symbols).
ir::Bindings bindProgramSymbols(const ir::Program& p, const ir::Bindings& given, int64_t fallback = 4);

// Fails when a symbol is unbound, a shape does not fit, or the program's
// communication cannot be ordered (ir/collective_order errors).
Result<std::vector<Plan>> lowerProgram(const ir::Program& p, const ir::Bindings& bindings);

}  // namespace sp::codegen

#pragma once
// Internals shared by the graph interpreter (interpreter.cpp) and the rank
// scheduler (scheduler.cpp). Not part of the public interface.
#include <chrono>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "ir/interpreter.h"

namespace sp::ir::detail {

// "matmul 'mm3' (model.onnx node 'MatMul_3')"; the location part is omitted
// when the node has none.
std::string nodeWhere(const Node& n);
// The error with the node (and an optional prefix such as "rank 1: ") in
// front of its message.
Error atNode(const Node& n, const Error& e, const std::string& prefix = {});

// Attributes with every symbolic dim (reshape/expand/recv shapes) bound.
Result<AttrMap> bindAttrs(const AttrMap& attrs, const Bindings& b);

// Infers the output types from the concrete input types, runs the kernel and
// checks that it produced exactly those types.
Result<std::vector<Tensor>> runKernel(OpKind op, const AttrMap& attrs, std::span<const Tensor> in);

// Checks a computed tensor against the value's declared (symbolic) type
// under the bindings.
Status checkBound(const Value& v, const Tensor& t, const Bindings& b);

// Per value, the index of the last node reading it: kKeepValue for graph
// outputs, -1 for values no node reads.
inline constexpr int64_t kKeepValue = INT64_MAX;
std::vector<int64_t> lastUses(const Graph& g);
// Restricted to the nodes marked in `needed`, with kKeepValue for `keep`
// only (graph outputs not in `keep` are released like intermediates).
std::vector<int64_t> lastUses(const Graph& g, const std::vector<bool>& needed,
                              const std::vector<ValueId>& keep);

// Collectives, send and recv: the nodes that synchronize ranks.
bool isCommunication(OpKind op);

// How execNode runs node `idx`: inputs whose last use (per `lastUse`; null
// when nothing is freed, as in runGraphAll) is this node are moved out of
// `vals` and donated to the kernel, which may write its output into them;
// `deadline` is checked before the kernel and polled inside it.
struct ExecEnv {
  const std::vector<int64_t>* lastUse = nullptr;
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
};

// Runs a non-collective node: reads its inputs from `vals`, writes outputs.
// Past the deadline: error id "time-limit" whose message is nodeWhere(n)
// (the caller adds the rank and the counts: timeLimitError).
Status execNode(const Graph& g, size_t idx, std::vector<Tensor>& vals, const Bindings& b, const ExecEnv& env);
bool pastDeadline(std::chrono::steady_clock::time_point deadline);
// The error a run reports at its deadline (RunOptions::deadline).
Error timeLimitError(const std::string& where, size_t done, size_t total, const std::string& of = "");

// Releases the inputs of node `idx` (and its unused outputs) whose last use
// it is, unless they are graph outputs.
void freeAfter(const Graph& g, size_t idx, const std::vector<int64_t>& lastUse,
               std::vector<Tensor>& vals);

}  // namespace sp::ir::detail

#pragma once
// The CPU interpreter: the reference semantics of every op. Deterministic
// (fixed reduction orders, fixed seeds), BLAS for matmul, threads where it
// pays, f16/bf16 stored rounded and computed in f32. Distributed programs run
// all ranks in-process under a cooperative scheduler that executes each
// collective once every member of its group has reached it.
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/program.h"

namespace sp::ir {

using TensorMap = std::map<std::string, Tensor>;

struct RunOptions {
  uint64_t seed = 0;        // for inputs and parameters not given
  Bindings symbols;         // values of symbolic dims not fixed by given inputs
  int64_t defaultSymbolValue = 4;  // for symbols bound by nothing else
  int threads = 0;          // 0: hardware concurrency
  // Called before each node runs (rank, node index, total): progress reporting.
  std::function<void(int64_t, size_t, size_t)> onNode;
};

// Deterministic random tensor for a value: floats ~ U(-1, 1) scaled by
// 1/sqrt(last dim) for parameters, integers in [0, hi) with hi from
// `intHigh` (or the smallest dim as a safe index bound), bools ~ Bernoulli(0.5).
Tensor randomTensor(const TensorType& type, const Bindings& symbols, uint64_t seed,
                    const std::string& name, int64_t intHigh = 0);

// Bind symbolic dims from given inputs (errors on conflicts), then fill
// missing inputs/params (param data from the model, else random).
Result<TensorMap> prepareInputs(const Graph& g, const TensorMap& given, const RunOptions& opts,
                                Bindings* boundOut = nullptr);

// Runs the graph; returns every graph output by name. Inputs not in `given`
// are drawn from the seed. Errors name the node and its location.
Result<TensorMap> runGraph(const Graph& g, const TensorMap& given, const RunOptions& opts = {});

// Also returns every intermediate value (for witnesses and debugging).
Result<std::vector<Tensor>> runGraphAll(const Graph& g, const TensorMap& given,
                                        const RunOptions& opts = {});

// Runs every rank; given[r] holds rank r's inputs. Returns outputs per rank.
// Deadlock or mismatched collectives are errors naming the ranks and ops.
Result<std::vector<TensorMap>> runProgram(const Program& p, const std::vector<TensorMap>& given,
                                          const RunOptions& opts = {});
Result<std::vector<std::vector<Tensor>>> runProgramAll(const Program& p,
                                                       const std::vector<TensorMap>& given,
                                                       const RunOptions& opts = {});

// Run one node's kernel on concrete inputs (checks input types against the
// shape function first). Used by tests and by the lemma checker.
Result<std::vector<Tensor>> evalOp(OpKind op, const AttrMap& attrs,
                                   const std::vector<Tensor>& inputs);

}  // namespace sp::ir

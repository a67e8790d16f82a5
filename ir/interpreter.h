#pragma once
// The CPU interpreter: the reference semantics of every op. Deterministic
// (fixed reduction orders, fixed seeds), BLAS for matmul, threads where it
// pays, f16/bf16 stored rounded and computed in f32. Distributed programs run
// all ranks in-process under a cooperative scheduler that executes each
// collective once every member of its group has reached it.
#include <chrono>
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
  // runGraph reports rank 0.
  std::function<void(int64_t, size_t, size_t)> onNode;
  // When false, an input or parameter that is neither given nor carries data
  // in the model is an error (missing-input) instead of being drawn at random.
  bool fillMissing = true;
  // Once this time has passed, the run stops with error id "time-limit" and
  // the message "interpreted up to matmul 'mm_4' (loc), 56 of 80 ops done"
  // (programs: "rank 1 matmul ..., 300 of 420 ops of all ranks done"; ops:
  // those that run). Checked before every node, and polled inside long
  // kernels (matmul and gemm between blocks of rows, gather, every loop
  // split by parallelFor) at most a few hundred milliseconds apart; an
  // interrupted kernel's output is discarded.
  std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
};

// Deterministic random tensor for a value. `symbols` must bind every symbol
// of `type` (asserted). Element i draws the 64-bit word
// splitmix64(key + i * 0x9e3779b97f4a7c15) with
// key = splitmix64(fnv1a64(name) ^ splitmix64(seed)) (the i-th output of a
// SplitMix64 stream, so the fill runs in parallel chunks with one result),
// mapped by hand so results do not depend on the standard library:
//   floats  ~ U(-1, 1) from the top 53 bits; parameter matrices
//             (`isParam`, rank >= 2) are scaled by 1/sqrt(the smaller of
//             their last two dims), parameter vectors are not;
//   integers ~ U[0, hi) with hi = intHigh if > 0, else 2 (multiply-high map);
//   bools   ~ Bernoulli(0.5) from the top bit.
// The rank is not mixed in: a value with the same name gets the same data on
// every rank, so replicated weights agree.
Tensor randomTensor(const TensorType& type, const Bindings& symbols, uint64_t seed,
                    const std::string& name, int64_t intHigh = 0, bool isParam = false);

// Safe exclusive upper bound for random integers of input/param `v`:
// the smallest valid index extent among its uses (gather / gather_elements /
// scatter_elements indices: the data dim along `axis`; cross_entropy target:
// the class dim 1 of the logits; one_hot: depth), followed through integer
// plumbing (identity, cast, layout ops, add/sub, the value inputs of where:
// Megatron's masked, offset targets); if it has none of those uses, the
// smallest dim 0 of a rank-2 float parameter (an embedding-table
// look-alike); else 2. Extents are evaluated under `symbols`; at least 1.
int64_t intHighFor(const Graph& g, ValueId v, const Bindings& symbols);

// Bind symbolic dims from given inputs (errors on conflicts), then fill
// missing inputs/params (param data from the model, else random). Given
// names must be inputs or parameters of `g`; dtype, rank and dims must match
// the declared types. Symbols are bound from given tensors, then from
// opts.symbols (a conflict with a given tensor is an error), then set to
// opts.defaultSymbolValue. `boundOut` receives the final bindings.
Result<TensorMap> prepareInputs(const Graph& g, const TensorMap& given, const RunOptions& opts,
                                Bindings* boundOut = nullptr);

// Runs the graph; returns every graph output by name. Inputs not in `given`
// are drawn from the seed. Errors name the node and its location:
// "matmul 'mm3' (model.onnx node 'MatMul_3'): ...". Intermediates are freed
// after their last use. Where a value is freed, elementwise kernels (unary,
// binary, where, dropout, softmax, layer/rms norm) write their output into
// its storage when nothing else references it (no view, no other value, no
// copy held by the caller) and dtype and dims match: the result is the same,
// and a chain of elementwise ops over a large tensor holds one buffer.
Result<TensorMap> runGraph(const Graph& g, const TensorMap& given, const RunOptions& opts = {});

// Has OpenBLAS take its per-thread buffers now (a few milliseconds): a
// process that may later run short of memory (a search near its limit,
// then a witness) calls it first, since OpenBLAS, asked for a buffer it
// cannot get, retries for ever rather than failing.
void reserveBlasBuffers();

// Also returns every intermediate value (for witnesses and debugging),
// indexed by ValueId.
Result<std::vector<Tensor>> runGraphAll(const Graph& g, const TensorMap& given,
                                        const RunOptions& opts = {});

// Runs every rank; given[r] holds rank r's inputs (`given` may be empty: all
// inputs drawn). Returns outputs per rank. Collectives reduce in group member
// order; send is buffered (never blocks), recv blocks until a message with
// the same (src, dst, tag) arrives, FIFO. Deadlock, mismatched collectives
// and sends never received are errors naming the ranks, ops and nodes.
Result<std::vector<TensorMap>> runProgram(const Program& p, const std::vector<TensorMap>& given,
                                          const RunOptions& opts = {});
Result<std::vector<std::vector<Tensor>>> runProgramAll(const Program& p,
                                                       const std::vector<TensorMap>& given,
                                                       const RunOptions& opts = {});

// Runs only what the values `keep` need and returns them, by ValueId (every
// other entry is undefined). Nodes outside the cone of `keep` are skipped;
// every value, graph outputs and inputs included, is released after its
// last use in the cone unless kept (inputs only if the caller moved `given`
// in); `onNode` sees only the nodes that run. For large witnesses: the peak
// memory is the live set of the cone, not of the graph.
Result<std::vector<Tensor>> runGraphKeep(const Graph& g, TensorMap given,
                                         const std::vector<ValueId>& keep,
                                         const RunOptions& opts = {});
// The same for a program: rank r keeps keep[r] (`keep` has one entry per
// rank). Every collective, send and recv runs on every rank (with its cone),
// so ranks meet at the same collectives as in a full run.
Result<std::vector<std::vector<Tensor>>> runProgramKeep(const Program& p, std::vector<TensorMap> given,
                                                        const std::vector<std::vector<ValueId>>& keep,
                                                        const RunOptions& opts = {});
// The nodes runGraphKeep (withCommunication false) or runProgramKeep (true)
// runs for `keep`, by node index.
std::vector<bool> neededNodes(const Graph& g, const std::vector<ValueId>& keep, bool withCommunication);

// Run one node's kernel on concrete inputs (checks input types against the
// shape function first). Used by tests and by the lemma checker. Collectives
// are an error (collective-outside-program).
Result<std::vector<Tensor>> evalOp(OpKind op, const AttrMap& attrs,
                                   const std::vector<Tensor>& inputs);

}  // namespace sp::ir

#pragma once
// Reverse-mode differentiation of IR graphs and SPMD programs: a forward
// graph becomes one training-step graph, its nodes followed by the backward
// nodes, so `verify` checks forward and backward of S and D together.
//
// The result has the forward's inputs and params, plus one tangent input per
// forward output that depends on a differentiated leaf (`d_<output>`, the
// output's type); its outputs are the forward outputs, then one gradient per
// differentiated leaf (`grad_<leaf>`, the leaf's type; zeros when nothing
// depends on it). Gradients are built from IR ops only (matmul with the
// other operand transposed, softmax as y * (g - sum(g y)), norms recomputing
// their statistics, ...), like the ATen backward decompositions of
// frontend/fx_ops_grad.cpp. An op with no rule on a differentiated path is
// an error naming the op and node ("autodiff-unsupported").
//
// Programs: each rank's graph is differentiated with Megatron's replicated-
// loss convention, derived from one rule instead of per-layer code. Every
// value is typed by the mesh axes over which it differs between ranks (the
// leaves' from `varies`; an op varies over the union of its inputs; an
// all_reduce, all_gather or broadcast over G no longer varies over G; a
// reduce_scatter or all_to_all over G does; a recv like its sender's value).
// The gradient of a value varies like the value. A contribution to it from
// an op that varies over more axes (a replicated activation read by a
// column-parallel matmul, a replicated weight read by a data-parallel
// batch, a norm weight read by sequence-parallel tokens) is partial over
// those axes and is all-reduced over each of them: Megatron's `f` operator,
// the layer-norm gradient all_reduce of sequence parallelism and the
// data-parallel gradient all_reduce all come from this rule. Collectives
// are adjoint to their forward: all_reduce sum -> identity (avg: scaled by
// 1 / group size), all_gather -> the rank's chunk (a reduce_scatter where
// the incoming gradient is still partial over the group: sequence
// parallelism's backward), reduce_scatter -> all_gather, all_to_all -> the
// reverse all_to_all, send -> recv of the gradient from the peer and recv ->
// send back, with tags offset by `gradTagOffset` (a float recv always sends
// a gradient back, zeros when nothing used it, so the pair never hangs).
// The backward runs in the reverse of the forward's node order: for
// micro-batches, every forward, then the backwards in reverse (GPipe's
// schedule).
#include <map>
#include <string>
#include <vector>

#include "ir/program.h"

namespace sp::ir {

struct GradOptions {
  // Leaves (inputs and params) to differentiate; empty: every float param.
  std::vector<std::string> wrt;
  std::string tangentPrefix = "d_";
  std::string gradPrefix = "grad_";
  int64_t gradTagOffset = 1 << 16;  // programs: backward send/recv tag = forward tag + this
  // Programs: per leaf name, the mesh axes over which it differs between
  // ranks ({} replicated). Every leaf of every rank must be listed.
  std::map<std::string, std::vector<std::string>> varies;
};

Result<Graph> differentiate(const Graph& forward, const GradOptions& options = {});
Result<Program> differentiate(const Program& forward, const GradOptions& options);

}  // namespace sp::ir

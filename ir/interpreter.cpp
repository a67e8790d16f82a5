// Single-graph execution: node-by-node kernels with type sanity checks.
#include "ir/interpreter.h"

#include <algorithm>

#include "ir/interpreter_impl.h"
#include "ir/kernel_util.h"

namespace sp::ir {
namespace detail {

std::string nodeWhere(const Node& n) {
  std::string out = std::string(opName(n.op)) + " '" + n.name + "'";
  std::string loc = n.loc.str();
  if (!loc.empty()) out += " (" + loc + ")";
  return out;
}

Error atNode(const Node& n, const Error& e, const std::string& prefix) {
  Error out = e;
  out.message = prefix + nodeWhere(n) + ": " + e.message;
  return out;
}

Result<AttrMap> bindAttrs(const AttrMap& attrs, const Bindings& b) {
  bool symbolic = false;
  for (const auto& [_, v] : attrs)
    if (const Shape* s = std::get_if<Shape>(&v)) symbolic = symbolic || !isConcrete(*s);
  if (!symbolic) return attrs;
  AttrMap out = attrs;
  for (auto& [name, v] : out) {
    Shape* s = std::get_if<Shape>(&v);
    if (!s || isConcrete(*s)) continue;
    auto dims = bindShape(*s, b);
    if (!dims) return makeError(dims.error().id, "attribute '" + name + "': " + dims.error().message);
    *s = shapeOf(*dims);
  }
  return out;
}

Result<std::vector<Tensor>> runKernel(OpKind op, const AttrMap& attrs, std::span<const Tensor> in) {
  const OpInfo& info = opInfo(op);
  std::vector<Tensor> out;
  if (info.category == OpCategory::Collective) {
    SP_TRY(info.kernel(op, attrs, in, out));  // reports collective-outside-program
    return makeError("collective-outside-program",
                     std::string(info.name) + ": collectives run only inside a distributed program");
  }
  std::vector<TensorType> types;
  types.reserve(in.size());
  for (const Tensor& t : in) {
    if (!t.defined()) return makeError("undefined-tensor", "an input tensor has no data");
    types.push_back(t.type());
  }
  InferCtx ctx{op, attrs, types, nullptr};
  SP_ASSIGN(auto outTypes, info.infer(ctx));
  SP_TRY(info.kernel(op, attrs, in, out));
  if (out.size() != outTypes.size())
    return makeError("kernel-output-mismatch",
                     "kernel produced " + std::to_string(out.size()) + " outputs but the shape " +
                         "function says " + std::to_string(outTypes.size()));
  for (size_t k = 0; k < out.size(); ++k)
    if (!out[k].defined() || !(out[k].type() == outTypes[k]))
      return makeError("kernel-output-mismatch",
                       "kernel produced " + (out[k].defined() ? out[k].type().str() : "nothing") +
                           " for output " + std::to_string(k) + " but the shape function says " +
                           outTypes[k].str());
  return out;
}

Status checkBound(const Value& v, const Tensor& t, const Bindings& b) {
  SP_ASSIGN(auto dims, bindShape(v.type.shape, b));
  if (t.dtype() != v.type.dtype || t.dims() != dims)
    return makeError("bound-type-mismatch",
                     "value '" + v.name + "' is " + t.type().str() + " at run time but " +
                         v.type.str() + " is " + TensorType{v.type.dtype, shapeOf(dims)}.str() +
                         " under the bindings");
  return okStatus();
}

std::vector<int64_t> lastUses(const Graph& g) {
  std::vector<int64_t> last(g.values().size(), -1);
  for (size_t i = 0; i < g.nodes().size(); ++i)
    for (ValueId v : g.nodes()[i].inputs) last[size_t(v)] = int64_t(i);
  for (ValueId v : g.outputs()) last[size_t(v)] = kKeepValue;
  return last;
}

std::vector<int64_t> lastUses(const Graph& g, const std::vector<bool>& needed,
                              const std::vector<ValueId>& keep) {
  std::vector<int64_t> last(g.values().size(), -1);
  for (size_t i = 0; i < g.nodes().size(); ++i)
    if (needed[i])
      for (ValueId v : g.nodes()[i].inputs) last[size_t(v)] = int64_t(i);
  for (ValueId v : keep) last[size_t(v)] = kKeepValue;
  return last;
}

bool isCommunication(OpKind op) { return opInfo(op).category == OpCategory::Collective; }

bool pastDeadline(std::chrono::steady_clock::time_point deadline) {
  return deadline != std::chrono::steady_clock::time_point::max() && std::chrono::steady_clock::now() >= deadline;
}

Error timeLimitError(const std::string& where, size_t done, size_t total, const std::string& of) {
  return makeError("time-limit", "interpreted up to " + where + ", " + std::to_string(done) + " of " +
                                     std::to_string(total) + " ops" + of + " done");
}

Status execNode(const Graph& g, size_t idx, std::vector<Tensor>& vals, const Bindings& b, const ExecEnv& env) {
  const Node& n = g.nodes()[idx];
  if (pastDeadline(env.deadline)) return makeError("time-limit", nodeWhere(n));
  KernelContext ctx;
  ctx.deadline = env.deadline;
  std::vector<Tensor> in;
  in.reserve(n.inputs.size());
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    ValueId v = n.inputs[i];
    SP_ASSERT(vals[size_t(v)].defined(), "value '" + g.value(v).name + "' read after release");
    // The value's last reader, at its last position among the inputs: hand
    // the reference over (freeAfter would drop it right after the node).
    bool dies = env.lastUse && (*env.lastUse)[size_t(v)] == int64_t(idx) && i < 64 &&
                std::find(n.inputs.begin() + int64_t(i) + 1, n.inputs.end(), v) == n.inputs.end();
    if (dies) {
      in.push_back(std::move(vals[size_t(v)]));
      ctx.donated |= uint64_t(1) << i;
    } else {
      in.push_back(vals[size_t(v)]);
    }
  }
  auto attrs = bindAttrs(n.attrs, b);
  if (!attrs) return atNode(n, attrs.error());
  Result<std::vector<Tensor>> out = [&] {
    KernelContextScope scope(&ctx);
    return runKernel(n.op, *attrs, in);
  }();
  if (ctx.interrupted) return makeError("time-limit", nodeWhere(n));
  if (!out) return atNode(n, out.error());
  for (size_t k = 0; k < n.outputs.size(); ++k) {
    const Value& v = g.value(n.outputs[k]);
    auto ok = checkBound(v, (*out)[k], b);
    if (!ok) return atNode(n, ok.error());
    vals[size_t(n.outputs[k])] = std::move((*out)[k]);
  }
  return okStatus();
}

void freeAfter(const Graph& g, size_t idx, const std::vector<int64_t>& lastUse,
               std::vector<Tensor>& vals) {
  const Node& n = g.nodes()[idx];
  for (ValueId v : n.inputs)
    if (lastUse[size_t(v)] == int64_t(idx)) vals[size_t(v)] = Tensor();
  for (ValueId v : n.outputs)
    if (lastUse[size_t(v)] < 0) vals[size_t(v)] = Tensor();
}

}  // namespace detail

std::vector<bool> neededNodes(const Graph& g, const std::vector<ValueId>& keep, bool withCommunication) {
  std::vector<bool> needed(g.nodes().size(), false), wanted(g.values().size(), false);
  for (ValueId v : keep) wanted[size_t(v)] = true;
  for (size_t i = g.nodes().size(); i-- > 0;) {
    const Node& n = g.nodes()[i];
    bool need = withCommunication && detail::isCommunication(n.op);
    for (ValueId o : n.outputs) need = need || wanted[size_t(o)];
    if (!need) continue;
    needed[i] = true;
    for (ValueId v : n.inputs) wanted[size_t(v)] = true;
  }
  return needed;
}

namespace {

enum class Keep { Outputs, All, Listed };

// `given` is taken by value: a caller that moves its inputs in lets them be
// released after their last use.
Result<std::vector<Tensor>> runGraphImpl(const Graph& g, TensorMap given, const RunOptions& opts,
                                         Keep mode, const std::vector<ValueId>& keep = {}) {
  Bindings b;
  SP_ASSIGN(TensorMap inputs, prepareInputs(g, given, opts, &b));
  given.clear();
  std::vector<Tensor> vals(g.values().size());
  for (auto& [name, t] : inputs) vals[size_t(*g.findValue(name))] = std::move(t);
  std::vector<bool> needed(g.nodes().size(), true);
  std::vector<int64_t> last;
  if (mode == Keep::Listed) {
    needed = neededNodes(g, keep, false);
    last = detail::lastUses(g, needed, keep);
  } else if (mode == Keep::Outputs) {
    last = detail::lastUses(g);
  }
  if (mode != Keep::All)
    for (size_t v = 0; v < vals.size(); ++v)
      if (last[v] < 0) vals[v] = Tensor();  // inputs nothing reads
  detail::ExecEnv env{mode == Keep::All ? nullptr : &last, opts.deadline};
  size_t total = g.nodes().size(), toRun = size_t(std::count(needed.begin(), needed.end(), true)), done = 0;
  for (size_t i = 0; i < total; ++i) {
    if (!needed[i]) continue;
    if (opts.onNode) opts.onNode(0, i, total);
    auto st = detail::execNode(g, i, vals, b, env);
    if (!st && st.error().id == "time-limit") return detail::timeLimitError(st.error().message, done, toRun);
    SP_TRY(st);
    ++done;
    if (mode != Keep::All) detail::freeAfter(g, i, last, vals);
  }
  return vals;
}

}  // namespace

Result<TensorMap> runGraph(const Graph& g, const TensorMap& given, const RunOptions& opts) {
  SP_ASSIGN(auto vals, runGraphImpl(g, given, opts, Keep::Outputs));
  TensorMap out;
  for (ValueId v : g.outputs()) out[g.value(v).name] = vals[size_t(v)];
  return out;
}

Result<std::vector<Tensor>> runGraphAll(const Graph& g, const TensorMap& given,
                                        const RunOptions& opts) {
  return runGraphImpl(g, given, opts, Keep::All);
}

Result<std::vector<Tensor>> runGraphKeep(const Graph& g, TensorMap given,
                                         const std::vector<ValueId>& keep, const RunOptions& opts) {
  for (ValueId v : keep) SP_ASSERT(size_t(v) < g.values().size(), "runGraphKeep: value id out of range");
  return runGraphImpl(g, std::move(given), opts, Keep::Listed, keep);
}

Result<std::vector<Tensor>> evalOp(OpKind op, const AttrMap& attrs,
                                   const std::vector<Tensor>& inputs) {
  const OpInfo& info = opInfo(op);
  int n = int(inputs.size());
  if (n < info.minInputs || (info.maxInputs >= 0 && n > info.maxInputs))
    return makeError("arity", std::string(info.name) + ": got " + std::to_string(n) +
                                  " inputs, expects " + std::to_string(info.minInputs) +
                                  (info.maxInputs < 0 ? " or more"
                                                      : " to " + std::to_string(info.maxInputs)));
  SP_ASSIGN(AttrMap complete, completeAttrs(op, attrs));
  for (const auto& [name, v] : complete)
    if (const Shape* s = std::get_if<Shape>(&v); s && !isConcrete(*s))
      return makeError("unbound-dim", std::string(info.name) + ": attribute '" + name +
                                          "' has symbolic dims " + shapeStr(*s));
  auto out = detail::runKernel(op, complete, inputs);
  if (!out) {
    Error e = out.error();
    if (e.message.rfind(std::string(info.name) + ":", 0) != 0)
      e.message = std::string(info.name) + ": " + e.message;
    return e;
  }
  return out;
}

}  // namespace sp::ir

// Inlining a decomposition at a call: bind the arguments, substitute the
// `${...}` expressions, parse the body as a text IR graph over the actual
// argument types, and copy its nodes into the capture's graph.
#include "frontend/fx_decomp.h"
#include "frontend/fx_decomp_expr.h"
#include "ir/text.h"

#include <algorithm>

namespace sp::frontend::fx {

namespace {

// The call's arguments by the decomposition's names.
Result<DecompEnv> bindArgs(Emitter& e, const Decomposition& d) {
  DecompEnv env;
  env.group = [&e](const std::string& c10d) { return e.groupFor(c10d); };
  // Every argument of the call must be declared: an ignored one could change
  // what the kernel computes.
  if (e.call->items.size() > d.args.size())
    return e.error("fx-arg", "the call passes " + std::to_string(e.call->items.size()) + " positional arguments, the decomposition " + d.file + " declares " + std::to_string(d.args.size()));
  for (const Kwarg& kw : e.call->kwargs) {
    const std::string& k = kw.first;  // not a structured binding: clang 14 cannot capture one
    if (std::none_of(d.args.begin(), d.args.end(), [&](const DecompArg& a) { return a.name == k; }))
      return e.error("fx-arg", "keyword argument '" + k + "' is not declared by the decomposition " + d.file);
  }
  for (size_t k = 0; k < d.args.size(); ++k) {
    const DecompArg& a = d.args[k];
    const Expr* x = e.arg(k, a.name.c_str());
    if (a.tensor) {
      SP_ASSIGN(TRef t, e.tensor(k, a.name.c_str()));
      env.tensors[a.name] = t;
      continue;
    }
    if (!x || x->kind == Expr::Kind::None) {
      if (!a.dflt) return e.error("fx-arg", "missing argument '" + a.name + "' (decomposition " + d.file + ")");
      auto v = evalDecompExpr(*a.dflt, env);
      if (!v) return e.error("fx-decomp-expr", "default of '" + a.name + "': " + v.error().message);
      env.scalars[a.name] = *v;
      continue;
    }
    auto v = decompValueOf(*x);
    if (!v) return e.error("fx-arg", "argument '" + a.name + "': " + v.error().message);
    env.scalars[a.name] = *v;
  }
  return env;
}

// `text` with every ${expr} replaced by its value; errors at file:line.
Result<std::string> substitute(const std::string& text, const DecompEnv& env, const Decomposition& d,
                               int firstLine, const std::string& callLoc) {
  std::string out;
  int line = firstLine;
  for (size_t p = 0; p < text.size();) {
    if (text[p] == '\n') ++line;
    if (text.compare(p, 2, "${") != 0) {
      out += text[p++];
      continue;
    }
    size_t q = text.find('}', p);
    if (q == std::string::npos)
      return makeError("fx-decomp-syntax", "unclosed '${'", d.file + ":" + std::to_string(line));
    auto v = evalDecompExpr(text.substr(p + 2, q - p - 2), env);
    if (!v)
      return makeError("fx-decomp-expr", v.error().message + " (decomposing the call at " + callLoc + ")",
                       d.file + ":" + std::to_string(line));
    out += renderDecompValue(*v);
    p = q + 1;
  }
  return out;
}

// The body as a graph whose inputs are the tensor arguments; body lines keep
// their line numbers in the decomposition file, so errors point there.
Result<ir::Graph> bodyGraph(Emitter& e, const Decomposition& d, const DecompEnv& env,
                            const std::vector<std::string>& results) {
  std::string text = "graph decomp {";
  for (const auto& a : d.args)
    if (a.tensor) text += " input %" + a.name + ": " + env.tensors.at(a.name).type.str() + ";";
  for (int l = 1; l < d.bodyLine; ++l) text += "\n";
  SP_ASSIGN(std::string body, substitute(d.body, env, d, d.bodyLine, e.captureLoc));
  text += body;
  for (const auto& r : results)
    if (!r.empty()) text += " output %" + r + "\n";
  text += "}\n";
  auto g = ir::parseGraph(text, d.file);
  if (!g) {
    Error err = g.error();
    err.message = "decomposition of " + d.op + " (called at " + e.captureLoc + "): " + err.message;
    return err;
  }
  return std::move(*g);
}

// mapDecomposition with the call's keyword arguments under declared names.
Status mapRenamed(Emitter& e, const Decomposition& d, bool functionalized, const std::vector<std::string>* bases) {
  SP_ASSIGN(DecompEnv env, bindArgs(e, d));
  for (const auto& [expr, msg] : d.requires_) {
    auto v = evalDecompExpr(expr, env);
    if (!v) return e.error("fx-decomp-expr", "require " + expr + ": " + v.error().message);
    auto* ok = std::get_if<int64_t>(&*v);
    if (!ok || *ok == 0) return e.error("fx-decomp-require", msg + " (" + d.file + ")");
  }
  // FX outputs: the op's results; auto_functionalized adds the new values of
  // the mutated arguments after them (slot 0 is None for ops returning nothing).
  std::vector<std::string> results = d.outputs;
  size_t first = 0;
  if (functionalized && d.outputs.empty()) first = 1;
  if (functionalized && bases) {
    for (const auto& b : *bases) {
      const DecompArg* a = d.findArg(b);
      auto m = std::find_if(d.mutates.begin(), d.mutates.end(),
                            [&](const auto& mu) { return a && mu.first == a->name; });
      if (m == d.mutates.end())
        return e.error("fx-arg", "auto_functionalized_v2 gives a new value of '" + b + "', which the decomposition " +
                                     d.file + " does not declare as mutated");
      results.push_back(m->second);
    }
  } else if (functionalized) {
    for (const auto& [arg, v] : d.mutates) results.push_back(v);
  }
  SP_ASSIGN(ir::Graph g, bodyGraph(e, d, env, results));
  if (!g.params().empty())
    return e.error("fx-decomp", "decomposition " + d.file + " declares parameters; use constant nodes");
  // Graph output j of the body is the j-th non-None result.
  std::vector<int> outIndex;
  for (size_t k = 0, j = 0; k < results.size(); ++k) outIndex.push_back(results[k].empty() ? -1 : int(j++));
  std::map<ir::ValueId, TRef> vals;
  for (ir::ValueId id : g.inputs()) vals[id] = env.tensors.at(g.value(id).name);
  for (const auto& n : g.nodes()) {
    PendingOp p{n.op, {}, {}, n.attrs, e.src, {}, e.captureLoc};
    // As in the C++ mappings, a collective over one rank is the identity.
    if (ir::opInfo(n.op).category == ir::OpCategory::Collective && n.attrs.count("group") &&
        n.inputs.size() == 1 && n.outputs.size() == 1) {
      SP_ASSIGN(int64_t size, e.groupSize(std::get<std::string>(n.attrs.at("group"))));
      if (size == 1) {
        p.op = ir::OpKind::Identity;
        p.attrs.clear();
      }
    }
    for (ir::ValueId in : n.inputs) p.inputs.push_back(vals.at(in).name);
    for (ir::ValueId o : n.outputs) {
      const ir::Value& v = g.value(o);
      TRef t{e.fresh(e.nodeName + "_" + v.name), v.type};
      vals[o] = t;
      p.outputs.push_back(t.name);
      p.declared.push_back(v.type);
    }
    e.ops.push_back(std::move(p));
  }
  for (size_t k = 0; k < e.outNames.size(); ++k) {
    if (!e.wanted(k)) continue;
    if (k < first || k >= first + results.size())
      return e.error("fx-getitem", "output " + std::to_string(k) + " does not exist in the decomposition " + d.file);
    if (outIndex[k - first] < 0)
      return e.error("fx-getitem", "output " + std::to_string(k) + " is None in the decomposition " + d.file);
    const TRef& v = vals.at(g.outputs()[size_t(outIndex[k - first])]);
    SP_ASSIGN(ir::TensorType want, e.outType(k));
    if (!(want == v.type))
      return e.error("type-mismatch", "decomposition " + d.file + " gives " + v.type.str() + " for output " +
                                          std::to_string(k) + " (%" + results[k - first] + "), the capture declares " +
                                          want.str());
    SP_TRY(e.outValue(k, v));
  }
  return okStatus();
}

}  // namespace

Status mapDecomposition(Emitter& e, const Decomposition& d, bool functionalized,
                        const std::vector<std::string>* bases) {
  // Keyword arguments under an alias (`out` for `result`) take the declared name.
  Expr renamed = *e.call;
  for (auto& [k, v] : renamed.kwargs)
    if (const DecompArg* a = d.findArg(k)) k = a->name;
  const Expr* original = e.call;
  e.call = &renamed;
  Status st = mapRenamed(e, d, functionalized, bases);
  e.call = original;
  return st;
}

}  // namespace sp::frontend::fx

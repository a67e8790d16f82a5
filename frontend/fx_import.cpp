// torch.fx capture -> IR: walks the parsed forward body, maps each call
// through the op table (fx_ops.cpp), drops nodes no output needs, and builds
// the graph or the per-rank program.
#include "frontend/fx_import.h"
#include "frontend/fx_collective_idioms.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "frontend/fx_decomp.h"
#include "frontend/fx_masked_update.h"
#include "frontend/fx_mutation.h"
#include "frontend/fx_ops.h"
#include "frontend/fx_partial.h"
#include "frontend/fx_torch_ops.h"

namespace sp::frontend {

using namespace fx;

namespace {

struct Built {
  ir::GraphBuilder builder;
  std::map<std::string, std::string> nodeLocs;  // IR node name -> "capture:line"
};

std::string lineLoc(const std::string& path, int line) { return path + ":" + std::to_string(line); }

// `Sym(s0)` -> "s0": the annotation of a SymInt value (a size, not a tensor).
std::optional<std::string> symText(const std::optional<std::string>& annotation) {
  if (!annotation || annotation->rfind("Sym(", 0) != 0 || annotation->back() != ')') return std::nullopt;
  return annotation->substr(4, annotation->size() - 5);
}

// Calls that only assert facts about sizes (Dynamo's runtime checks of
// data-dependent sizes): no value, nothing to import.
bool isSizeAssertion(const Expr& v) {
  static const char* kOps[] = {"torch.ops.aten._assert_scalar.default",
                               "torch.ops.aten.sym_constrain_range_for_size.default",
                               "torch.ops.aten.sym_constrain_range.default",
                               "torch.ops.aten._assert_async.msg",
                               "torch.ops.aten._assert_async.default",
                               "torch._check",
                               "torch._check_is_size"};
  if (v.kind != Expr::Kind::Call) return false;
  for (const char* op : kOps)
    if (v.s == op) return true;
  return false;
}

// Calls of a torch-level graph that compute no value: grad mode changes
// (`torch._C._set_grad_enabled(False)` around no_grad regions) do not change
// forward values.
bool isValuelessCall(const Expr& v) {
  return v.kind == Expr::Kind::Call && (v.s == "torch._C._set_grad_enabled" || v.s == "torch._C._log_api_usage_once");
}

// Size queries of tensors (SymInt results), when printed without a type.
bool isSizeQuery(const Expr& v) {
  return v.kind == Expr::Kind::Call &&
         (v.s.rfind("torch.ops.aten.sym_size", 0) == 0 || v.s.rfind("torch.ops.aten.sym_numel", 0) == 0 ||
          v.s.rfind("torch.ops.aten.sym_stride", 0) == 0 || v.s.rfind("torch.ops.aten.sym_storage_offset", 0) == 0);
}

// Unbacked symbols (u0, u1: sizes Dynamo learns only at run time, from
// nonzero, item, unique, ...) of a shape.
std::set<std::string> unbackedSymbols(const ir::Shape& s) {
  std::set<std::string> out;
  for (const auto& d : s)
    for (const auto& sym : d.syms)
      if (sym.size() > 1 && sym[0] == 'u' &&
          std::all_of(sym.begin() + 1, sym.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); }))
        out.insert(sym);
  return out;
}

// Unbacked symbols of the tensors an expression reads.
void readSymbols(const Emitter& e, const Expr& x, std::set<std::string>& out) {
  if (x.kind == Expr::Kind::Name) {
    if (auto it = e.env.find(x.s); it != e.env.end())
      for (const auto& u : unbackedSymbols(it->second.type.shape)) out.insert(u);
    return;
  }
  for (const auto& i : x.items) readSymbols(e, i, out);
  for (const auto& [k, v] : x.kwargs) readSymbols(e, v, out);
}

// `x[k]` or `operator.getitem(x, k)` -> (x, k).
bool asGetitem(const Expr& v, std::string& base, int64_t& idx) {
  const Expr* b = nullptr;
  const Expr* i = nullptr;
  if (v.kind == Expr::Kind::Subscript) {
    b = &v.items[0];
    i = &v.items[1];
  } else if (v.kind == Expr::Kind::Call && v.s == "operator.getitem" && v.items.size() == 2) {
    b = &v.items[0];
    i = &v.items[1];
  }
  if (!b || b->kind != Expr::Kind::Name || i->kind != Expr::Kind::Int) return false;
  base = b->s;
  idx = i->i;
  return true;
}

// The op a call statement applies: an ATen-style call, or the op wrapped by
// `torch.ops.higher_order.auto_functionalized(op, **kwargs)` (functionalized
// mutating kernels such as vLLM's `_C.rms_norm`), whose call is rebuilt
// without the op operand in `wrapped`. auto_functionalized_v2 passes each
// mutated argument as `_<arg>_base_index = k` into `_all_bases`; the call is
// rebuilt with `<arg> = _all_bases[k]`, and `bases` lists the mutated
// arguments by base index (the order of the new values in its tuple).
Result<std::string> calledOp(Emitter& e, const Expr& call, Expr& wrapped, bool& functionalized,
                             std::vector<std::string>& bases) {
  functionalized = false;
  bases.clear();
  bool v2 = call.s == "torch.ops.higher_order.auto_functionalized_v2";
  if (call.s == "torch.ops.higher_order.auto_functionalized" || v2) {
    std::string hop = v2 ? "auto_functionalized_v2" : "auto_functionalized";
    if (call.items.empty() || call.items[0].kind != Expr::Kind::Dotted ||
        call.items[0].s.rfind("torch.ops.", 0) != 0)
      return makeError("fx-arg", hop + " needs the op as its first argument", e.captureLoc);
    wrapped = call;
    wrapped.items.erase(wrapped.items.begin());
    functionalized = true;
    std::string op = call.items[0].s.substr(10);
    if (!v2) return op;
    const Expr* all = nullptr;
    for (const auto& [k, v] : call.kwargs)
      if (k == "_all_bases") all = &v;
    if (!all || all->kind != Expr::Kind::List)
      return makeError("fx-arg", hop + " of " + op + " has no _all_bases list", e.captureLoc);
    bases.assign(all->items.size(), "");
    wrapped.kwargs.clear();
    for (const auto& [k, v] : call.kwargs) {
      if (k == "_all_bases") continue;
      if (k.size() < 2 || k[0] != '_') {
        wrapped.kwargs.emplace_back(k, v);
        continue;
      }
      const std::string suffix = "_base_index";
      if (!k.ends_with(suffix))
        return makeError("fx-unsupported",
                         hop + " of " + op + ": '" + k + "' (a mutated argument that is a view of its base) is not "
                             "supported; only whole bases can be imported",
                         e.captureLoc);
      std::string arg = k.substr(1, k.size() - 1 - suffix.size());
      if (v.kind == Expr::Kind::None) continue;  // not mutated in this call
      if (v.kind != Expr::Kind::Int || v.i < 0 || v.i >= int64_t(bases.size()))
        return makeError("fx-arg", hop + " of " + op + ": " + k + " = " + v.str() + " is not an index into the " +
                                       std::to_string(bases.size()) + " bases",
                         e.captureLoc);
      if (!bases[size_t(v.i)].empty())
        return makeError("fx-unsupported", hop + " of " + op + ": arguments '" + bases[size_t(v.i)] + "' and '" + arg +
                                               "' share base " + std::to_string(v.i),
                         e.captureLoc);
      bases[size_t(v.i)] = arg;
      wrapped.kwargs.emplace_back(arg, all->items[size_t(v.i)]);
    }
    for (size_t k = 0; k < bases.size(); ++k)
      if (bases[k].empty())
        return makeError("fx-arg", hop + " of " + op + ": base " + std::to_string(k) + " is not used by any argument",
                         e.captureLoc);
    return op;
  }
  if (call.s.rfind("torch.ops.", 0) != 0)
    return makeError("fx-unsupported-call", "call of '" + call.s + "' is not an ATen op", e.captureLoc);
  return call.s.substr(10);
}

Status mapCall(Emitter& e, const std::string& path, const Stmt& s,
               const std::map<int64_t, const Stmt*>* getitems, const DecompLibrary& lib) {
  // A torch-level call (Dynamo's graphs): its ATen steps, mapped in turn;
  // intermediates typed by the translation, the last step typed by the
  // capture (a picked tuple result reads the statement's declared type).
  if (isTorchLevelCall(s.value)) {
    SP_ASSIGN(std::vector<AtenStep> steps, translateTorchCall(e, s.value, s.target));
    for (size_t k = 0; k < steps.size(); ++k) {
      Stmt st = s;
      st.value = std::move(steps[k].call);
      if (k + 1 < steps.size()) {
        st.target = steps[k].target;
        st.annotation = steps[k].type->str();
        SP_TRY(mapCall(e, path, st, nullptr, lib));
      } else if (steps[k].pick) {
        if (getitems) return e.error("fx-getitem", "result is not a tuple but is indexed");
        st.target = e.fresh(s.target + "_tuple");
        st.annotation.reset();
        std::map<int64_t, const Stmt*> picked{{*steps[k].pick, &s}};
        SP_TRY(mapCall(e, path, st, &picked, lib));
      } else {
        SP_TRY(mapCall(e, path, st, getitems, lib));
      }
    }
    return okStatus();
  }
  Expr wrapped;
  bool functionalized = false;
  std::vector<std::string> bases;
  SP_ASSIGN(std::string op, calledOp(e, s.value, wrapped, functionalized, bases));
  // A size that no input determines (an unbacked u<N>) cannot be related
  // between S and D: name the op that makes it.
  std::set<std::string> known;
  readSymbols(e, s.value, known);
  std::vector<std::pair<std::string, int>> declared;
  if (s.annotation) declared.emplace_back(*s.annotation, s.line);
  if (getitems)
    for (const auto& [k, st] : *getitems)
      if (st->annotation) declared.emplace_back(*st->annotation, st->line);
  for (const auto& [text, line] : declared) {
    auto t = parseTensorAnnotation(text);
    if (!t) continue;  // reported below with its location
    for (const auto& u : unbackedSymbols(t->shape))
      if (!known.count(u))
        return makeError("fx-data-dependent",
                         "node '" + s.target + "' (" + op + ") has the data-dependent size " + u + " (" + text +
                             "): its extent depends on tensor values, not on input shapes, so S and D cannot be "
                             "related; a model with a static size there is needed",
                         lineLoc(path, line));
  }
  // `torch.ops._c10d_functional.all_reduce(...)`: an op packet, called
  // without an overload, as Dynamo's torch-level graphs print it
  if (!functionalized && std::count(op.begin(), op.end(), '.') == 1 && !findOpMapping(op) && !lib.find(op) &&
      findOpMapping(op + ".default"))
    op += ".default";
  const OpMapping* m = functionalized ? nullptr : findOpMapping(op);
  const Decomposition* d = m ? nullptr : lib.find(op);
  if (!m && !d)
    return makeError("fx-unsupported-op",
                     "unsupported op " + op + " (node '" + s.target +
                         "'): the importer has no mapping and no decomposition file declares it; write one "
                         "(docs/fx-import.md, \"Framework kernels\") and pass its directory with --decomp",
                     e.captureLoc);
  if (d && !functionalized && !d->mutates.empty())
    return makeError("fx-unsupported", op + " mutates its arguments; only its auto_functionalized form can be imported",
                     e.captureLoc);
  int tupleOutputs = m ? m->tupleOutputs
                     : functionalized ? int(std::max<size_t>(1, d->outputs.size()) +
                                            (s.value.s.ends_with("_v2") ? bases.size() : d->mutates.size()))
                     : d->outputs.size() == 1 ? 0 : int(d->outputs.size());
  e.call = functionalized ? &wrapped : &s.value;
  e.op = op;
  e.src = s.src;
  e.nodeName = s.target;
  e.code = s.code;
  e.outNames.clear();
  e.outTypes.clear();
  std::vector<int> getitemLines;  // per tuple index: the line that reads it
  if (tupleOutputs == 0) {
    if (getitems) return e.error("fx-getitem", "result is not a tuple but is indexed");
    e.outNames.push_back(s.target);
    if (s.annotation) {
      auto t = parseTensorAnnotation(*s.annotation);
      if (!t) return makeError(t.error().id, t.error().message, e.captureLoc);
      e.outTypes.push_back(*t);
    } else {
      e.outTypes.emplace_back();
    }
  } else {
    size_t n = size_t(tupleOutputs);
    if (getitems)
      for (const auto& [k, st] : *getitems) {
        if (k < 0)
          return makeError("fx-getitem", "negative tuple index " + std::to_string(k), lineLoc(path, st->line));
        n = std::max(n, size_t(k) + 1);
      }
    e.outNames.assign(n, "");
    e.outTypes.assign(n, std::nullopt);
    getitemLines.assign(n, 0);
    if (getitems)
      for (const auto& [k, st] : *getitems) {
        e.outNames[size_t(k)] = st->target;
        getitemLines[size_t(k)] = st->line;
        if (st->annotation) {
          auto t = parseTensorAnnotation(*st->annotation);
          if (!t) return makeError(t.error().id, t.error().message, lineLoc(path, st->line));
          e.outTypes[size_t(k)] = *t;
        }
      }
  }
  e.outBound.assign(e.outNames.size(), false);
  SP_TRY(m ? m->fn(e) : mapDecomposition(e, *d, functionalized, s.value.s.ends_with("_v2") ? &bases : nullptr));
  e.call = nullptr;  // `wrapped` dies here
  for (size_t k = 0; k < e.outNames.size(); ++k) {
    if (e.outNames[k].empty() || e.outBound[k]) continue;
    // A tuple index past the op's results is the capture's error (fuzzing
    // found `native_layer_norm_backward[3]`); a lone result left unbound
    // is the mapping's.
    SP_ASSERT(k < getitemLines.size(), "fx mapping of " + op + " did not produce output " + std::to_string(k));
    return makeError("fx-getitem",
                     "'" + e.outNames[k] + "' reads result " + std::to_string(k) + " of " + op +
                         ", which has no such result",
                     lineLoc(path, getitemLines[k]));
  }
  return okStatus();
}

// An in-place call (`x.add_(y)`, `itruediv = operator.itruediv(x, y)` from
// `x /= y`): its out-of-place value, typed as the mutated tensor (an
// in-place op keeps its operand's type), bound to the statement's target;
// the mutated name and its exact aliases name that value from here on.
Status mapInPlace(Emitter& e, const std::string& path, const Stmt& s, size_t at, const std::string& mutated,
                  AliasTracker& aliases, std::set<std::string>& rebound, const DecompLibrary& lib) {
  SP_ASSIGN(std::vector<std::string> names, aliases.mutate(mutated, at, s.target, e.captureLoc));
  auto r = e.env.find(mutated);
  if (r == e.env.end())
    return makeError("fx-arg", "node '" + s.target + "' (" + s.value.s + ") mutates '" + mutated +
                                   "', which is not a tensor value",
                     e.captureLoc);
  const TRef recv = r->second;
  Stmt st = s;
  if (st.annotation) {
    auto t = parseTensorAnnotation(*st.annotation);
    if (!t) return makeError(t.error().id, t.error().message, e.captureLoc);
    if (!(*t == recv.type))
      return makeError("fx-type", "node '" + s.target + "' is declared " + t->str() + " but mutates '" + mutated +
                                      "' of type " + recv.type.str() + " in place (an in-place op keeps its type)",
                       e.captureLoc);
  } else {
    st.annotation = recv.type.str();
  }
  // `x /= y` without the binding FX prints after it: a fresh name
  if (st.target == mutated || e.env.count(st.target)) st.target = e.fresh(s.target + "_inplace");
  // Operands of other dtypes (`x += y` with x f16, y f32): torch computes
  // in their promoted dtype and casts the result back to x's, which it
  // refuses where the cast is not allowed (a float into an integer).
  const std::optional<ir::DType> computed = inPlaceComputeType(e, s.value);
  if (computed && *computed != recv.dtype()) {
    if (!canCast(*computed, recv.dtype()))
      return makeError("fx-type", "node '" + s.target + "' (" + s.value.s + ") computes in " +
                                      std::string(ir::dtypeName(*computed)) + " (its operands' promoted dtype) but is in place on '" +
                                      mutated + "' of dtype " + std::string(ir::dtypeName(recv.dtype())) +
                                      ", which torch cannot cast it back to (it raises 'result type " +
                                      torchTypeName(*computed) + " can't be cast to the desired output type " +
                                      torchTypeName(recv.dtype()) + "')",
                       e.captureLoc);
    Stmt wide = st;
    wide.target = e.fresh(s.target + "_promoted");
    wide.annotation = ir::TensorType{*computed, recv.type.shape}.str();
    SP_TRY(mapCall(e, path, wide, nullptr, lib));
    st.value = atenCallExpr("aten._to_copy.default", {nameExpr(wide.target)}, {}, s.value);
  }
  SP_TRY(mapCall(e, path, st, nullptr, lib));
  const TRef out = e.env.at(st.target);
  for (const auto& n : names) {
    e.env[n] = out;
    rebound.insert(n);
  }
  aliases.same(st.target, mutated);
  return okStatus();
}

// How `target = base[index]` of a tensor shares base's storage
// (fx_mutation.h): an advanced index (a list, a tensor of rank >= 1: torch's
// index op) returns a copy; basic items a view (a 0-d tensor index too:
// torch selects with an integer one).
void trackSubscript(const Emitter& e, AliasTracker& aliases, const std::string& target, const Expr& base,
                    const Expr& index) {
  const std::vector<Expr> items = index.kind == Expr::Kind::Tuple ? index.items : std::vector<Expr>{index};
  const bool copies = std::any_of(items.begin(), items.end(), [&](const Expr& i) {
    if (i.kind == Expr::Kind::List) return true;
    auto t = i.kind == Expr::Kind::Name ? e.env.find(i.s) : e.env.end();
    return t != e.env.end() && t->second.rank() > 0;
  });
  if (copies || base.kind != Expr::Kind::Name) return aliases.fresh(target);
  aliases.subscript(target, base.s, index);
}

// A name unpacked from tree_flatten_spec: a graph input typed by its
// declaration line (a SymInt when declared `Sym(...)`).
Status addFlattenedInput(Emitter& e, const std::string& name, const std::map<std::string, const Stmt*>& declared,
                         const std::string& path) {
  auto d = declared.find(name);
  if (d == declared.end())
    return makeError("fx-untyped", "'" + name + "' is unpacked from tree_flatten_spec but has no declaration line ('" +
                                       name + ": \"f32[...]\";')",
                     e.captureLoc);
  const Stmt& st = *d->second;
  if (auto sym = symText(st.annotation)) {
    e.syms[name] = *sym;
    return okStatus();
  }
  auto t = parseTensorAnnotation(*st.annotation);
  if (!t) return makeError(t.error().id, "'" + name + "': " + t.error().message, lineLoc(path, st.line));
  e.leaves.push_back({name, *t, false, std::nullopt, ir::SourceLoc{path, st.line, st.col, ""}});
  e.env[name] = TRef{name, *t};
  return okStatus();
}

Result<Built> build(const std::string& text, const std::string& path, const FxOptions& opts,
                    int64_t rank, int64_t worldSize) {
  SP_ASSIGN(Module m, parseModule(text, path));
  std::vector<std::string> dirs = opts.decompDirs;
  // The shipped directory is optional (an installed binary may lack it):
  // without it, framework kernels are unsupported ops, never guessed.
  if (std::error_code ec; std::filesystem::is_directory(defaultDecompDir(), ec)) dirs.push_back(defaultDecompDir());
  SP_ASSIGN(DecompLibrary lib, DecompLibrary::load(dirs));
  Emitter e(m, opts, rank);
  AliasTracker aliases(m);
  std::set<std::string> rebound;  // names an in-place op rebound to its result
  e.worldSize = worldSize;
  e.capturePath = path;
  // AOTAutograd joint graphs take pytree containers (`primals`, `tangents`)
  // and unpack them with tree_flatten_spec into declared names.
  std::set<std::string> flattened;
  for (const auto& s : m.body)
    if (s.kind == Stmt::Kind::Unpack && s.value.kind == Expr::Kind::Call && s.value.s.ends_with("tree_flatten_spec") &&
        !s.value.items.empty())
      for (const auto& c : s.value.items[0].items)
        if (c.kind == Expr::Kind::Name) flattened.insert(c.s);
  // torch.export's graph signature says which arguments stand for the
  // module's parameters, buffers and constant tensors: the graph's params.
  std::map<std::string, std::string> argKind;
  if (m.signature)
    for (const auto& in : m.signature->inputs) {
      if (in.name.empty()) continue;
      if (std::none_of(m.params.begin(), m.params.end(), [&](const Param& p) { return p.name == in.name; }))
        return makeError("fx-signature",
                         "the graph signature names input '" + in.name + "', which forward does not take",
                         lineLoc(path, in.line));
      argKind[in.name] = in.kind;
    }
  for (const auto& p : m.params) {
    std::string loc = lineLoc(path, p.line);
    if (auto sym = symText(p.annotation)) {
      e.syms[p.name] = *sym;
      continue;
    }
    if (!p.annotation && flattened.count(p.name)) continue;
    if (!p.annotation)
      return makeError("fx-untyped", "forward argument '" + p.name + "' has no type annotation", loc);
    auto t = parseTensorAnnotation(*p.annotation);
    if (!t) return makeError(t.error().id, "forward argument '" + p.name + "': " + t.error().message, loc);
    const std::string kind = argKind.count(p.name) ? argKind.at(p.name) : "";
    const bool param = kind == "PARAMETER" || kind == "BUFFER" || kind == "CONSTANT_TENSOR";
    e.leaves.push_back({p.name, *t, param, std::nullopt, ir::SourceLoc{path, p.line, p.col, ""}});
    e.env[p.name] = TRef{p.name, *t};
    aliases.input(p.name);
  }
  // Values with a tensor type (typed arguments and nodes, and their
  // aliases): a subscript of one indexes the tensor (torch-level graphs);
  // tuple results are untyped.
  std::set<std::string> tensors;
  for (const auto& p : m.params)
    if (p.annotation && !symText(p.annotation)) tensors.insert(p.name);
  for (const auto& s : m.body) {
    if (s.kind != Stmt::Kind::Assign) continue;
    if (s.annotation && !symText(s.annotation)) tensors.insert(s.target);
    else if (!s.annotation && s.value.kind == Expr::Kind::Name && tensors.count(s.value.s)) tensors.insert(s.target);
    // `x[i] = v;  setitem = x` binds x's new value, untyped as Dynamo prints it
    else if (s.value.kind == Expr::Kind::Call && s.value.s == "operator.setitem") tensors.insert(s.target);
  }
  // Tuple results are read by getitem lines: their targets name the outputs.
  std::map<std::string, std::map<int64_t, const Stmt*>> getitems;
  for (const auto& s : m.body) {
    std::string base;
    int64_t idx;
    if (s.kind == Stmt::Kind::Assign && asGetitem(s.value, base, idx) && !tensors.count(base))
      getitems[base][idx] = &s;
  }
  std::vector<std::pair<std::string, ir::SourceLoc>> outputs;
  std::set<std::string> outNames;
  std::map<std::string, const Stmt*> declared;  // `name: "type";` lines
  std::map<std::string, ir::Shape> sizeResults;  // `size = x.size()`: x's shape
  // A partial import (FxOptions::partial): the names left out, and the
  // leaves (graph inputs) that statements left out added
  DroppedValues dropped;
  std::set<std::string> droppedLeaves;
  std::optional<size_t> firstDroppedOutput;  // the earliest cause among the dropped outputs
  auto isTensor = [&](const std::string& n) { return e.env.count(n) > 0; };
  // Leaves statement s out for `cause`: its target, and when it mutates a
  // tensor in place, every name that may share that tensor's storage.
  auto dropStatement = [&](const Stmt& s, size_t cause) -> Status {
    dropped.drop(s.target, cause);
    const TorchCallInfo info = torchCallInfo(e, s.value);
    const std::optional<std::string> mutated = info.mutates ? info.viewOf : atenMutatedArg(s.value);
    if (mutated) {
      SP_ASSIGN(std::vector<std::string> names, aliases.mutateUnknown(*mutated, s.target, e.captureLoc));
      for (const auto& n : names) dropped.drop(n, cause);
    }
    if (isCollectiveCall(s.value))
      opts.partial->collectives.push_back(calleeName(s.value, isTensor) + " (node '" + s.target + "') at " +
                                          e.captureLoc);
    return okStatus();
  };
  // A statement whose node has a data-dependent result size: an error, or
  // in a partial import the cause of what it leaves out.
  auto dataDependent = [&](const Stmt& s, const Error& err, size_t leavesBefore) -> Status {
    if (!opts.partial || err.id != "fx-data-dependent") return err;
    for (size_t k = leavesBefore; k < e.leaves.size(); ++k) droppedLeaves.insert(e.leaves[k].name);
    size_t c = dropped.addCause({calleeName(s.value, isTensor), s.target, e.captureLoc, err});
    return dropStatement(s, c);
  };
  // `x[mask] += v`: getitem, in-place operators, setitem (fx_masked_update.h)
  std::vector<MaskedUpdate> maskedUpdates;
  const std::map<size_t, MaskedUpdate*> masked = indexMaskedUpdates(m, maskedUpdates);
  // One statement of such a chain, when the chain fits: true when done.
  auto maskedStep = [&](const Stmt& s, size_t at, MaskedUpdate& u, size_t leavesBefore) -> Result<bool> {
    auto x = e.env.find(u.base), mask = e.env.find(u.mask);
    if (x == e.env.end() || mask == e.env.end()) return false;
    if (at == u.getitem) {
      if (!maskFits(x->second, mask->second)) return false;
      // the getitem alone: its error, kept for a later step that does not fit
      Stmt call = s;
      call.value.kind = Expr::Kind::Call;
      call.value.s = "operator.getitem";
      Status st = mapCall(e, path, call, nullptr, lib);
      if (st.ok()) {
        trackSubscript(e, aliases, s.target, s.value.items[0], s.value.items[1]);
        return true;
      }
      if (st.error().id != "fx-data-dependent") return st.error();
      u.active = true;
      u.getitemError = st.error();
      e.env[s.target] = x->second;  // the copy, of all of x
      aliases.fresh(s.target);
      return true;
    }
    if (!u.active) return false;
    if (at != u.setitem) {
      const Expr& operand = s.value.items[1];
      std::optional<TRef> ov;
      bool known = operand.isNumber();
      if (operand.kind == Expr::Kind::Name && e.env.count(operand.s)) {
        ov = e.env.at(operand.s);
        known = true;
      }
      if (!known || !operandFits(x->second, mask->second, ov)) {
        // not the same for every row: the getitem's data-dependent size stands
        u.active = false;
        e.captureLoc = lineLoc(path, m.body[u.getitem].line);
        SP_TRY(dataDependent(m.body[u.getitem], *u.getitemError, leavesBefore));
        if (auto c = dropped.causeOf(m.body[u.getitem].target))
          for (const auto& n : u.copy) dropped.drop(n, *c);
        return true;
      }
      Stmt st = s;
      st.annotation.reset();  // typed [u0, ...] as the selected rows; here all of x
      SP_TRY(mapInPlace(e, path, st, at, s.value.items[0].s, aliases, rebound, lib));
      return true;
    }
    const TRef value = e.env.at(s.value.items[2].s);
    SP_ASSIGN(std::vector<std::string> names, aliases.mutate(u.base, at, s.target, e.captureLoc));
    e.nodeName = s.target;
    e.src = s.src;
    const TRef out = maskedWrite(e, x->second, mask->second, value);
    e.env[s.target] = out;
    for (const auto& n : names) {
      e.env[n] = out;
      rebound.insert(n);
    }
    aliases.same(s.target, u.base);
    return true;
  };
  for (const auto& s : m.body) {
    const size_t at = size_t(&s - m.body.data());
    e.captureLoc = lineLoc(path, s.line);
    const Expr& v = s.value;
    const size_t leavesBefore = e.leaves.size();
    if (opts.partial && s.kind == Stmt::Kind::Assign && v.kind != Expr::Kind::None) {
      if (auto c = dropped.reads(v)) {
        SP_TRY(dropStatement(s, *c));
        continue;
      }
      dropped.keep(s.target);
    }
    if (s.kind == Stmt::Kind::Declare) {
      declared[s.target] = &s;
      continue;
    }
    if (s.kind == Stmt::Kind::Unpack) {
      if (v.kind != Expr::Kind::Call || !v.s.ends_with("tree_flatten_spec"))
        return makeError("fx-unsupported-stmt", "unsupported unpacking of " + v.str(), e.captureLoc);
      for (const auto& t : s.targets) {
        SP_TRY(addFlattenedInput(e, t, declared, path));
        aliases.input(t);
      }
      continue;
    }
    if (auto sym = symText(s.annotation)) {
      e.syms[s.target] = *sym;
      continue;
    }
    if (isSizeAssertion(v)) continue;
    if (!s.annotation && isSizeQuery(v)) {
      e.syms[s.target] = v.str();
      continue;
    }
    // Torch-level size queries (`size = l_x_.size()`, `l_x_.size(1)`,
    // `l_x_.dim()`): SymInts, known integers where the dims are concrete;
    // `size[1]` reads one dim of a `size()` result.
    if (!s.annotation && v.kind == Expr::Kind::Call) {
      size_t dot = v.s.find('.');
      std::string recv = dot == std::string::npos ? "" : v.s.substr(0, dot);
      std::string method = dot == std::string::npos ? "" : v.s.substr(dot + 1);
      if (auto it = e.env.find(recv); it != e.env.end() && v.kwargs.empty()) {
        const ir::Shape& shape = it->second.type.shape;
        if (method == "size" && v.items.empty()) {
          sizeResults[s.target] = shape;
          e.syms[s.target] = v.str();
          continue;
        }
        if (method == "size" && v.items.size() == 1 && v.items[0].kind == Expr::Kind::Int) {
          int64_t k = v.items[0].i < 0 ? v.items[0].i + int64_t(shape.size()) : v.items[0].i;
          if (k < 0 || k >= int64_t(shape.size()))
            return makeError("fx-dim", v.str() + ": dim " + std::to_string(v.items[0].i) + " of a " +
                                           std::to_string(shape.size()) + "-d tensor",
                             e.captureLoc);
          e.syms[s.target] = shape[size_t(k)].str();
          continue;
        }
        if (method == "dim" && v.items.empty()) {
          e.syms[s.target] = std::to_string(shape.size());
          continue;
        }
      }
    }
    std::string sizeBase;
    int64_t i = 0;
    if (asGetitem(v, sizeBase, i) && sizeResults.count(sizeBase)) {
      const ir::Shape& shape = sizeResults.at(sizeBase);
      int64_t k = i < 0 ? i + int64_t(shape.size()) : i;
      if (k < 0 || k >= int64_t(shape.size()))
        return makeError("fx-dim", v.str() + ": index " + std::to_string(i) + " of a " +
                                       std::to_string(shape.size()) + "-d size",
                         e.captureLoc);
      e.syms[s.target] = shape[size_t(k)].str();
      continue;
    }
    if (s.kind == Stmt::Kind::Return) {
      const Expr* r = &v;
      if (r->kind == Expr::Kind::Call && r->s.ends_with("tree_unflatten") && !r->items.empty())
        r = &r->items[0];
      std::vector<const Expr*> items;
      if (r->kind == Expr::Kind::List || r->kind == Expr::Kind::Tuple) {
        for (const auto& it : r->items) items.push_back(&it);
      } else {
        items.push_back(r);
      }
      for (const Expr* it : items) {
        if (it->kind == Expr::Kind::None) continue;
        if (auto c = it->kind == Expr::Kind::Name ? dropped.causeOf(it->s) : std::nullopt) {
          const DropCause& why = dropped.cause(*c);
          opts.partial->outputs.push_back(
              {path, it->s, s.line, why.op, why.node, why.location, why.error.message});
          if (!firstDroppedOutput || *c < *firstDroppedOutput) firstDroppedOutput = c;
          continue;
        }
        e.nodeName = "return";
        e.op = "output";
        SP_ASSIGN(TRef t, e.tensorOf(*it));
        // An output that aliases another value (clone, wait_tensor, a full
        // slice) keeps its capture name through an identity node.
        std::string name = t.name;
        // a name an in-place op rebound: its first value may hold the name
        bool renamed = it->kind == Expr::Kind::Name && rebound.count(it->s) &&
                       (e.producer(it->s) || std::any_of(e.leaves.begin(), e.leaves.end(),
                                                          [&](const PendingLeaf& l) { return l.name == it->s; }));
        if (it->kind == Expr::Kind::Name && it->s != t.name) {
          std::string as = renamed ? e.fresh(it->s) : it->s;
          if (!outNames.count(as))
            e.ops.push_back({ir::OpKind::Identity, {t.name}, {as}, {}, ir::SourceLoc{path, s.line, it->col, ""},
                             {t.type}, e.captureLoc});
          name = as;
        }
        outNames.insert(name);
        outputs.emplace_back(name, ir::SourceLoc{path, s.line, it->col, ""});
      }
      if (m.signature) {
        std::set<std::string> returned;
        for (const Expr* it : items)
          if (it->kind == Expr::Kind::Name) returned.insert(it->s);
        for (const auto& o : m.signature->outputs)
          if (!o.name.empty() && !returned.count(o.name))
            return makeError("fx-signature",
                             "the graph signature names output '" + o.name + "' (" + o.kind +
                                 "), which forward does not return",
                             lineLoc(path, o.line));
      }
      break;
    }
    std::string base;
    int64_t idx;
    if (v.kind == Expr::Kind::None) continue;  // `x = None` frees a value
    if (asGetitem(v, base, idx) && !tensors.count(base)) {
      if (!e.env.count(s.target))
        return makeError("fx-getitem", "'" + s.target + "' reads " + base + "[" + std::to_string(idx) +
                                           "], which is not a tuple result defined before",
                         e.captureLoc);
      aliases.piece(s.target, base);
      continue;
    }
    if (v.kind == Expr::Kind::Dotted && v.s.rfind("self.", 0) == 0) {
      e.attrs[s.target] = v.s.substr(5);
      aliases.input(s.target);
      continue;
    }
    if (v.kind == Expr::Kind::Name) {
      e.nodeName = s.target;
      e.op = "alias";
      SP_ASSIGN(TRef t, e.tensorOf(v));
      e.env[s.target] = t;
      aliases.same(s.target, v.s);
      continue;
    }
    if (auto mu = masked.find(at); mu != masked.end()) {
      SP_ASSIGN(bool done, maskedStep(s, at, *mu->second, leavesBefore));
      if (done) continue;
    }
    if (v.kind == Expr::Kind::Subscript) {
      // `x[(Ellipsis, slice(None, 1, None))]`: operator.getitem of a tensor
      Stmt call = s;
      call.value.kind = Expr::Kind::Call;
      call.value.s = "operator.getitem";
      auto g = getitems.find(s.target);
      if (Status st = mapCall(e, path, call, g == getitems.end() ? nullptr : &g->second, lib); !st) {
        SP_TRY(dataDependent(s, st.error(), leavesBefore));
        continue;
      }
      trackSubscript(e, aliases, s.target, v.items[0], v.items[1]);
      continue;
    }
    if (v.kind != Expr::Kind::Call)
      return makeError("fx-unsupported-stmt", "unsupported statement: " + s.target + " = " + v.str(),
                       e.captureLoc);
    if (isValuelessCall(v)) continue;
    // Autocast regions: one that disables autocast (Hugging Face's rotary
    // embedding) computes as without it; in an enabled one an op's
    // operands would be cast to a dtype the capture does not show
    if (v.s == "torch.amp.autocast_mode._exit_autocast") continue;
    if (v.s == "torch.amp.autocast_mode._enter_autocast") {
      const Expr* on = v.items.size() > 2 ? &v.items[2] : nullptr;
      for (const auto& [k, x] : v.kwargs)
        if (k == "enabled") on = &x;
      if (on && on->kind == Expr::Kind::Bool && !on->b) continue;
      return makeError("fx-unsupported",
                       "autocast region (" + v.str() +
                           "): only regions that disable autocast are supported (in an enabled one, operands are "
                           "cast to dtypes the capture does not show)",
                       e.captureLoc);
    }
    const TorchCallInfo info = torchCallInfo(e, v);
    if (info.mutates) {
      if (!info.viewOf)
        return makeError("fx-arg", "node '" + s.target + "' (" + v.s + ") mutates its first argument, which is not "
                                   "a tensor value", e.captureLoc);
      if (info.inPlaceView)
        return makeError("fx-unsupported", "node '" + s.target + "' (" + v.s + ") is an in-place view op: it changes "
                                           "the shape or strides of '" + *info.viewOf + "' in place, which is not "
                                           "supported", e.captureLoc);
      if (Status st = mapInPlace(e, path, s, at, *info.viewOf, aliases, rebound, lib); !st)
        SP_TRY(dataDependent(s, st.error(), leavesBefore));
      continue;
    }
    auto g = getitems.find(s.target);
    if (Status st = mapCall(e, path, s, g == getitems.end() ? nullptr : &g->second, lib); !st) {
      SP_TRY(dataDependent(s, st.error(), leavesBefore));
      continue;
    }
    if (v.s == "operator.getitem" && v.items.size() == 2 && v.kwargs.empty())
      trackSubscript(e, aliases, s.target, v.items[0], v.items[1]);
    else if (info.viewOf) aliases.view(s.target, *info.viewOf);
    else aliases.fresh(s.target);
  }
  // Every output depends on a data-dependent size: the first such node's error.
  if (outputs.empty() && firstDroppedOutput) return dropped.cause(*firstDroppedOutput).error;
  // Keep only nodes some output (transitively) needs: mappings may leave
  // ignored buffers (the `empty` of baddbmm with beta = 0) behind.
  std::set<std::string> live;
  for (const auto& [n, _] : outputs) live.insert(n);
  std::vector<bool> keep(e.ops.size(), false);
  for (size_t k = e.ops.size(); k-- > 0;) {
    for (const auto& o : e.ops[k].outputs)
      if (live.count(o)) keep[k] = true;
    if (keep[k]) live.insert(e.ops[k].inputs.begin(), e.ops[k].inputs.end());
  }
  // A split read at one piece is the slice of that piece: Megatron's
  // `torch.split(x, n, dim)[rank]` (scatter to the sequence- or tensor-
  // parallel region), a rank-affine slice, so that rank graphs differing
  // only in the piece they read stay one graph up to slice bounds.
  for (size_t k = 0; k < e.ops.size(); ++k) {
    auto& p = e.ops[k];
    if (!keep[k] || p.op != ir::OpKind::Split) continue;
    std::vector<size_t> read;
    for (size_t o = 0; o < p.outputs.size(); ++o)
      if (live.count(p.outputs[o])) read.push_back(o);
    const std::vector<int64_t> sizes = ir::attrInts(p.attrs, "sizes");
    if (read.size() != 1 || sizes.size() != p.outputs.size()) continue;
    const size_t o = read[0];
    int64_t start = 0;
    for (size_t i = 0; i < o; ++i) start += sizes[i];
    p.op = ir::OpKind::Slice;
    p.attrs = ir::AttrMap{{"starts", std::vector<int64_t>{start}},
                          {"ends", std::vector<int64_t>{start + sizes[o]}},
                          {"axes", std::vector<int64_t>{ir::attrInt(p.attrs, "axis")}},
                          {"steps", std::vector<int64_t>{1}}};
    p.outputs = {p.outputs[o]};
    p.declared = {o < p.declared.size() ? p.declared[o] : std::nullopt};
  }
  std::string name = std::filesystem::path(path).filename().string();
  Built b{ir::GraphBuilder(name), {}};
  for (auto& l : e.leaves) {
    if (droppedLeaves.count(l.name) && !live.count(l.name)) continue;  // added by a statement left out
    if (l.isParam) SP_TRY(b.builder.addParam(l.name, l.type, l.data, l.loc));
    else SP_TRY(b.builder.addInput(l.name, l.type, l.loc));
  }
  for (size_t k = 0; k < e.ops.size(); ++k) {
    if (!keep[k]) continue;
    auto& p = e.ops[k];
    b.nodeLocs[p.outputs[0]] = p.captureLoc;
    Status st = b.builder.addNode(p.op, p.inputs, p.outputs, p.attrs, p.loc, p.outputs[0], p.declared);
    if (!st) return makeError(st.error().id, st.error().message, p.captureLoc);
  }
  for (const auto& [n, loc] : outputs) SP_TRY(b.builder.addOutput(n, loc));
  return b;
}

// Builder errors name the node ("mul 'mul_3': ..."); point them at the capture line.
Error atCaptureLine(Error err, const std::map<std::string, std::string>& locs) {
  size_t a = err.message.find('\'');
  size_t b = a == std::string::npos ? a : err.message.find('\'', a + 1);
  if (b != std::string::npos) {
    auto it = locs.find(err.message.substr(a + 1, b - a - 1));
    if (it != locs.end()) err.location = it->second;
  }
  return err;
}

Result<std::string> readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return makeError("fx-io", "cannot read '" + path + "'");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

Result<ir::GraphBuilder> importFxToBuilder(const std::string& text, const std::string& path,
                                           const FxOptions& opts, int64_t rank) {
  SP_ASSIGN(Built b, build(text, path, opts, rank, opts.worldSize));
  return std::move(b.builder);
}

Result<ir::Graph> importFxText(const std::string& text, const std::string& path, const FxOptions& opts) {
  SP_ASSIGN(Built b, build(text, path, opts, opts.rank, opts.worldSize));
  ir::Mesh mesh = opts.mesh;
  if (mesh.axes.empty()) mesh.axes.push_back({"world", opts.worldSize});
  ir::GroupSizeFn gs = ir::groupSizeFor(mesh, opts.namedGroups, opts.rank);
  auto g = std::move(b.builder).finish(&gs);
  if (!g) return atCaptureLine(g.error(), b.nodeLocs);
  return std::move(*g);
}

Result<ir::Graph> importFxGraph(const std::string& path, const FxOptions& opts) {
  SP_ASSIGN(std::string text, readFile(path));
  return importFxText(text, path, opts);
}

Result<ir::Program> importFxProgram(const std::vector<std::string>& rankFiles, const FxOptions& opts) {
  if (rankFiles.empty()) return makeError("fx-no-ranks", "no rank files given");
  if (!opts.mesh.axes.empty() && opts.mesh.worldSize() != int64_t(rankFiles.size()))
    return makeError("fx-mesh", "the mesh has " + std::to_string(opts.mesh.worldSize()) + " ranks but " +
                                    std::to_string(rankFiles.size()) + " rank files are given");
  ir::ProgramBuilder pb(int64_t(rankFiles.size()), opts.mesh);
  for (const auto& [name, members] : opts.namedGroups) SP_TRY(pb.addGroup(name, members));
  static const std::regex kRank(R"(\.r(\d+)\.[A-Za-z0-9]+$)");
  for (size_t r = 0; r < rankFiles.size(); ++r) {
    const std::string& path = rankFiles[r];
    std::smatch mt;
    if (std::regex_search(path, mt, kRank) && std::stoll(mt[1].str()) != int64_t(r))
      return makeError("fx-rank-order", "rank file '" + path + "' is rank " + mt[1].str() +
                                            " but is listed as rank " + std::to_string(r));
    SP_ASSIGN(std::string text, readFile(path));
    SP_ASSIGN(Built b, build(text, path, opts, int64_t(r), int64_t(rankFiles.size())));
    Status st = pb.setRank(int64_t(r), std::move(b.builder));
    if (!st) {
      Error err = st.error();
      return atCaptureLine(err, b.nodeLocs);
    }
  }
  SP_ASSIGN(ir::Program p, std::move(pb).finish());
  // functional collectives along another dim than 0, written as torch
  // writes them (a split and a concat around the dim-0 collective): one
  // collective along that dim
  return fuseDimCollectives(p);
}

}  // namespace sp::frontend

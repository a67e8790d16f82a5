// The import state: value table, emission of IR nodes with immediate type
// inference (so errors name the ONNX node), constant folding and
// materialization of folded values into the IR graph.
#include "frontend/onnx_context.h"
#include "ir/interpreter.h"

namespace sp::frontend::onnx_detail {

using ir::Dim;
using ir::DType;
using ir::OpKind;
using ir::Tensor;

namespace {
// Results of constant folding larger than this stay IR nodes.
constexpr int64_t kMaxFoldElements = int64_t(1) << 16;
}  // namespace

void Importer::setNode(const onnx::NodeProto* n, size_t index) {
  node_ = n;
  nodeName_ = n->name().empty() ? n->op_type() + "_" + std::to_string(index) : n->name();
}

Error Importer::err(const std::string& id, const std::string& msg) const {
  return makeError(id, msg, node_ ? location() : path_);
}

ir::SourceLoc Importer::loc() const {
  ir::SourceLoc l;
  l.file = path_;
  l.detail = nodeName_;
  return l;
}

size_t Importer::numInputs() const { return size_t(node_->input_size()); }
bool Importer::hasInput(size_t i) const { return i < numInputs() && !node_->input(int(i)).empty(); }
Result<std::string> Importer::input(size_t i) const {
  if (!hasInput(i))
    return err("onnx-missing-input", opType() + ": input " + std::to_string(i) + " is required");
  const std::string& n = node_->input(int(i));
  if (!vals_.count(n))
    return err("onnx-undefined-value", opType() + ": input '" + n + "' is not defined");
  return n;
}
size_t Importer::numOutputs() const { return size_t(node_->output_size()); }
bool Importer::hasOutput(size_t i) const {
  return i < numOutputs() && !node_->output(int(i)).empty();
}
std::string Importer::output(size_t i) const { return hasOutput(i) ? node_->output(int(i)) : ""; }

Result<KnownInts> Importer::knownInts(size_t i, const std::string& what) const {
  SP_ASSIGN(std::string name, input(i));
  const Val& v = vals_.at(name);
  if (v.known) return *v.known;
  if (v.konst) {
    if (ir::isFloat(v.konst->dtype()) || v.konst->rank() > 1)
      return err("onnx-bad-attr-input",
                 opType() + ": " + what + " ('" + name + "') must be an integer scalar or vector");
    KnownInts k;
    k.scalar = v.konst->rank() == 0;
    for (int64_t x : intsOfTensor(*v.konst)) k.vals.push_back(Dim(x));
    return k;
  }
  return err("onnx-not-constant", opType() + ": " + what + " ('" + name +
                                      "') is not constant after folding; only constant " + what +
                                      " is supported");
}

Result<std::vector<int64_t>> Importer::constInts(size_t i, const std::string& what) const {
  SP_ASSIGN(KnownInts k, knownInts(i, what));
  std::vector<int64_t> out;
  for (const Dim& d : k.vals) {
    if (!d.isConcrete())
      return err("onnx-not-constant", opType() + ": " + what + " depends on symbolic dim '" +
                                          d.str() + "'; only constant " + what + " is supported");
    out.push_back(d.coef);
  }
  return out;
}

Result<Tensor> Importer::constTensor(size_t i, const std::string& what) const {
  SP_ASSIGN(std::string name, input(i));
  const Val& v = vals_.at(name);
  if (v.konst) return *v.konst;
  if (v.known && v.known->concrete()) {
    std::vector<int64_t> ints;
    for (const Dim& d : v.known->vals) ints.push_back(d.coef);
    return tensorFromInts(ints, v.known->scalar, v.type.dtype);
  }
  return err("onnx-not-constant", opType() + ": " + what + " ('" + name +
                                      "') is not constant after folding; only constant " + what +
                                      " is supported");
}

Result<double> Importer::constScalar(size_t i, const std::string& what) const {
  SP_ASSIGN(Tensor t, constTensor(i, what));
  if (t.numel() != 1)
    return err("onnx-bad-attr-input",
               opType() + ": " + what + " must have one element, got " + std::to_string(t.numel()));
  return t.getAsDouble(0);
}

Status Importer::define(const std::string& name, Val v) {
  if (name.empty()) return okStatus();
  if (vals_.count(name)) return err("duplicate-name", "value '" + name + "' is defined twice");
  vals_.emplace(name, std::move(v));
  return checkDeclared(name);
}

Status Importer::alias(const std::string& outName, const std::string& inName) {
  // An unfoldable initializer keeps its own parameter name.
  if (vals_.at(inName).initializer && !foldable(vals_.at(inName))) SP_TRY(materialize(inName));
  return define(outName, vals_.at(inName));
}

std::string Importer::fresh(const std::string& hint) {
  for (;;) {
    std::string n = nodeName_ + "/" + hint + "." + std::to_string(freshCounter_++);
    if (!reserved_.count(n) && !vals_.count(n)) return n;
  }
}

bool Importer::foldable(const Val& v) const {
  if (!v.konst) return false;
  return !v.initializer || !ir::isFloat(v.konst->dtype()) || v.konst->numel() <= 1;
}

Result<std::vector<std::string>> Importer::emit(OpKind op, const std::vector<std::string>& inputs,
                                                ir::AttrMap attrs,
                                                std::vector<std::string> outputs) {
  const ir::OpInfo& info = ir::opInfo(op);
  std::string where = opType() + " -> " + std::string(info.name);
  auto full = ir::completeAttrs(op, std::move(attrs));
  if (!full) return err(full.error().id, where + ": " + full.error().message);
  std::vector<ir::TensorType> inTypes;
  bool fold =
      info.category != ir::OpCategory::Collective && info.category != ir::OpCategory::Random;
  for (const auto& in : inputs) {
    const Val& v = vals_.at(in);
    inTypes.push_back(v.type);
    fold = fold && foldable(v);
  }
  ir::InferCtx ctx{op, *full, inTypes, opts_.groupSize ? &opts_.groupSize : nullptr};
  auto types = info.infer(ctx);
  if (!types) return err(types.error().id, where + ": " + types.error().message);
  for (const auto& t : *types) {
    SP_TRY(ir::checkType(t, where));
    auto n = ir::numElements(t.shape);
    fold = fold && ir::isConcrete(t.shape) && n && n->value() <= kMaxFoldElements;
  }
  if (outputs.size() < types->size()) outputs.resize(types->size());
  for (auto& o : outputs)
    if (o.empty()) o = fresh(std::string(info.name));
  if (fold) {
    std::vector<Tensor> ins;
    for (const auto& in : inputs) ins.push_back(*vals_.at(in).konst);
    auto res = ir::evalOp(op, *full, ins);
    if (res && res->size() == types->size()) {
      for (size_t k = 0; k < res->size(); ++k) {
        Val v;
        v.type = (*types)[k];
        v.konst = (*res)[k];
        v.known = knownOfTensor(v.konst.value());
        SP_TRY(define(outputs[k], std::move(v)));
      }
      return outputs;
    }
  }
  std::vector<std::string> irIns;
  for (const auto& in : inputs) {
    SP_ASSIGN(std::string n, materialize(in));
    irIns.push_back(n);
  }
  SP_TRY(b_.addNode(op, irIns, outputs, *full, loc(), nodeName_ + "/" + outputs[0]));
  for (size_t k = 0; k < types->size(); ++k) {
    Val v;
    v.type = (*types)[k];
    v.irName = outputs[k];
    SP_TRY(define(outputs[k], std::move(v)));
  }
  return outputs;
}

Result<std::string> Importer::emit1(OpKind op, const std::vector<std::string>& inputs,
                                    ir::AttrMap attrs, const std::string& output) {
  SP_ASSIGN(auto outs, emit(op, inputs, std::move(attrs), {output}));
  return outs.at(0);
}

Result<std::string> Importer::constant(Tensor t, const std::string& hint) {
  std::string n = fresh(hint);
  Val v;
  v.type = t.type();
  v.known = knownOfTensor(t);
  v.konst = std::move(t);
  SP_TRY(define(n, std::move(v)));
  return n;
}

Result<std::string> Importer::materialize(const std::string& name) {
  Val& v = vals_.at(name);
  if (!v.irName.empty()) return v.irName;
  if (v.konst) {
    if (v.initializer) {
      SP_TRY(b_.addParam(name, v.type, *v.konst, ir::SourceLoc{path_, 0, 0, ""}));
    } else {
      SP_TRY(b_.addNode(OpKind::Constant, {}, {name}, {{"value", *v.konst}}, loc(),
                        nodeName_ + "/" + name));
    }
    vals_.at(name).irName = name;
    return name;
  }
  if (v.known) return materializeKnown(name, *v.known);
  return err("internal", "value '" + name + "' has no definition");
}

// A symbolic integer vector becomes IR ops: each symbolic element d is
// reduce_sum(expand(1, [d])), so the graph computes it from the bound dims.
Result<std::string> Importer::materializeKnown(const std::string& name, const KnownInts& k) {
  DType dt = vals_.at(name).type.dtype;
  std::vector<std::string> parts;
  for (const Dim& d : k.vals) {
    if (d.isConcrete()) {
      SP_ASSIGN(std::string c, constant(tensorFromInts({d.coef}, false), "dim"));
      parts.push_back(c);
      continue;
    }
    SP_ASSIGN(std::string one, constant(tensorFromInts({1}, false), "one"));
    SP_ASSIGN(std::string ones, emit1(OpKind::Expand, {one}, {{"shape", ir::Shape{d}}}));
    SP_ASSIGN(std::string sum,
              emit1(OpKind::ReduceSum, {ones},
                    {{"axes", std::vector<int64_t>{0}}, {"keepdims", int64_t(1)}}));
    parts.push_back(sum);
  }
  std::string cur;
  if (parts.size() == 1) {
    cur = parts[0];
  } else {
    SP_ASSIGN(cur, emit1(OpKind::Concat, parts, {{"axis", int64_t(0)}}));
  }
  if (k.scalar) {
    SP_ASSIGN(cur, emit1(OpKind::Reshape, {cur}, {{"shape", ir::Shape{}}}));
  }
  if (dt != DType::I64) {
    SP_ASSIGN(cur, emit1(OpKind::Cast, {cur}, {{"to", dt}}));
  }
  SP_ASSIGN(std::string irn, materialize(cur));
  vals_.at(name).irName = irn;
  return irn;
}

Status Importer::addGraphInput(const std::string& name, ir::TensorType type) {
  SP_TRY(b_.addInput(name, type, ir::SourceLoc{path_, 0, 0, ""}));
  Val v;
  v.type = std::move(type);
  v.irName = name;
  vals_.emplace(name, std::move(v));
  return okStatus();
}

Status Importer::addInitializer(const std::string& name, Tensor data) {
  Val v;
  v.type = data.type();
  v.known = knownOfTensor(data);
  v.konst = std::move(data);
  v.initializer = true;
  vals_[name] = std::move(v);  // an initializer overrides a same-named graph input
  return okStatus();
}

Status Importer::checkDeclared(const std::string& name) const {
  auto it = declared_.find(name);
  if (it == declared_.end()) return okStatus();
  const ir::TensorType& want = it->second;
  const ir::TensorType& have = vals_.at(name).type;
  bool bad = want.dtype != have.dtype || want.shape.size() != have.shape.size();
  for (size_t i = 0; !bad && i < want.shape.size(); ++i)
    bad =
        want.shape[i].isConcrete() && have.shape[i].isConcrete() && want.shape[i] != have.shape[i];
  if (bad)
    return err("shape-mismatch", "value '" + name + "' is declared " + want.str() +
                                     " but the importer computes " + have.str());
  return okStatus();
}

Status Importer::addGraphOutput(const std::string& name) {
  if (!vals_.count(name))
    return makeError("undefined-value", "graph output '" + name + "' is not defined", path_);
  node_ = nullptr;
  nodeName_ = "output " + name;
  SP_ASSIGN(std::string irn, materialize(name));
  ir::SourceLoc l{path_, 0, 0, ""};
  // Keep the ONNX output name in the IR graph.
  if (irn != name) SP_TRY(b_.addNode(OpKind::Identity, {irn}, {name}, {}, l, name));
  return b_.addOutput(name, l);
}

}  // namespace sp::frontend::onnx_detail

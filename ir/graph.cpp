#include "ir/graph.h"

#include <algorithm>
#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/strong_components.hpp>
#include <queue>
#include <set>

namespace sp::ir {

std::string SourceLoc::str() const {
  std::string out;
  if (!file.empty()) {
    out = file;
    if (line > 0) out += ":" + std::to_string(line);
    if (col > 0) out += ":" + std::to_string(col);
  } else if (line > 0) {
    out = "line " + std::to_string(line);
    if (col > 0) out += ":" + std::to_string(col);
  }
  if (!detail.empty()) {
    if (!out.empty()) out += " ";
    out += "node '" + detail + "'";
  }
  return out;
}

const Tensor* Graph::paramData(ValueId id) const {
  auto it = paramData_.find(id);
  return it == paramData_.end() ? nullptr : &it->second;
}

std::optional<ValueId> Graph::findValue(const std::string& name) const {
  auto it = byName_.find(name);
  if (it == byName_.end()) return std::nullopt;
  return it->second;
}

std::vector<std::string> Graph::symbols() const {
  std::set<std::string> syms;
  for (const auto* list : {&inputs_, &params_})
    for (ValueId v : *list)
      for (const Dim& d : value(v).type.shape) syms.insert(d.syms.begin(), d.syms.end());
  return {syms.begin(), syms.end()};
}

Status checkType(const TensorType& t, const std::string& what) {
  for (const Dim& d : t.shape)
    if (d.coef < 0 || d.coef > kMaxElements)
      return makeError("bad-dim", what + ": dim " + std::to_string(d.coef) +
                                      " is out of range [0, 2^48] in " + t.str());
  if (!numElements(t.shape))
    return makeError("bad-dim", what + ": " + t.str() + " has more than 2^48 elements");
  return okStatus();
}

Status GraphBuilder::claimName(const std::string& name, const SourceLoc& loc) {
  if (name.empty()) return makeError("empty-name", "value with an empty name", loc.str());
  auto [it, fresh] = defined_.emplace(name, loc);
  if (!fresh) {
    std::string prev = it->second.str();
    return makeError("duplicate-name", "value '" + name + "' is defined twice" +
                                           (prev.empty() ? "" : " (first at " + prev + ")"),
                     loc.str());
  }
  return okStatus();
}

Status GraphBuilder::addInput(const std::string& name, TensorType type, SourceLoc loc) {
  SP_TRY(claimName(name, loc));
  SP_TRY(checkType(type, "input '" + name + "'"));
  leaves_.push_back({name, std::move(type), false, std::nullopt, std::move(loc)});
  return okStatus();
}

Status GraphBuilder::addParam(const std::string& name, TensorType type, std::optional<Tensor> data,
                              SourceLoc loc) {
  SP_TRY(claimName(name, loc));
  SP_TRY(checkType(type, "parameter '" + name + "'"));
  if (data) {
    if (data->dtype() != type.dtype || shapeOf(data->dims()) != type.shape)
      return makeError("param-data-mismatch", "parameter '" + name + "' is declared " + type.str() +
                                                  " but its data is " + data->type().str(),
                       loc.str());
  }
  leaves_.push_back({name, std::move(type), true, std::move(data), std::move(loc)});
  return okStatus();
}

Status GraphBuilder::addNode(OpKind op, std::vector<std::string> inputs,
                             std::vector<std::string> outputs, AttrMap attrs, SourceLoc loc,
                             std::string nodeName, std::vector<std::optional<TensorType>> declared) {
  for (const auto& o : outputs) SP_TRY(claimName(o, loc));
  if (nodeName.empty()) nodeName = outputs.empty() ? std::string(opName(op)) + "_" +
                                                         std::to_string(pending_.size())
                                                   : outputs[0];
  pending_.push_back({op, std::move(nodeName), std::move(inputs), std::move(outputs),
                      std::move(attrs), std::move(loc), std::move(declared)});
  return okStatus();
}

Status GraphBuilder::addOutput(const std::string& name, SourceLoc loc) {
  outputs_.emplace_back(name, std::move(loc));
  return okStatus();
}

namespace {

// Names the nodes of one cycle, using Boost's strongly connected components.
std::string describeCycle(const std::vector<std::vector<size_t>>& succ,
                          const std::vector<std::string>& names) {
  using G = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS>;
  G g(succ.size());
  for (size_t u = 0; u < succ.size(); ++u)
    for (size_t v : succ[u]) boost::add_edge(u, v, g);
  std::vector<int> comp(succ.size());
  int n = boost::strong_components(g, comp.data());
  std::vector<std::vector<size_t>> members(static_cast<size_t>(n));
  for (size_t u = 0; u < succ.size(); ++u) members[size_t(comp[u])].push_back(u);
  for (size_t u = 0; u < succ.size(); ++u) {
    const auto& m = members[size_t(comp[u])];
    bool selfLoop = std::find(succ[u].begin(), succ[u].end(), u) != succ[u].end();
    if (m.size() > 1 || selfLoop) {
      std::string out;
      for (size_t i = 0; i < m.size() && i < 6; ++i) out += (i ? " -> " : "") + names[m[i]];
      if (m.size() > 6) out += " -> ...";
      return out + " -> " + names[m[0]];
    }
  }
  return "?";
}

}  // namespace

Result<Graph> GraphBuilder::finish(const GroupSizeFn* groupSize) && {
  Graph g;
  g.name_ = name_;
  std::map<std::string, ValueId> ids;
  // Leaves first, in declaration order.
  for (auto& leaf : leaves_) {
    ValueId id = ValueId(g.values_.size());
    g.values_.push_back({leaf.name, leaf.type, leaf.isParam ? ValueKind::Param : ValueKind::Input,
                         -1, 0, leaf.loc});
    ids[leaf.name] = id;
    (leaf.isParam ? g.params_ : g.inputs_).push_back(id);
    if (leaf.data) g.paramData_.emplace(id, std::move(*leaf.data));
  }
  // Producer of each node-output name.
  std::map<std::string, size_t> producer;
  for (size_t i = 0; i < pending_.size(); ++i)
    for (const auto& o : pending_[i].outputs) producer[o] = i;
  // Dependencies and undefined names.
  std::vector<std::vector<size_t>> succ(pending_.size());
  std::vector<int> indeg(pending_.size(), 0);
  for (size_t i = 0; i < pending_.size(); ++i) {
    const auto& pn = pending_[i];
    const OpInfo& info = opInfo(pn.op);
    int n = int(pn.inputs.size());
    if (n < info.minInputs || (info.maxInputs >= 0 && n > info.maxInputs)) {
      std::string want = info.maxInputs < 0 ? "at least " + std::to_string(info.minInputs)
                         : info.minInputs == info.maxInputs
                             ? std::to_string(info.minInputs)
                             : std::to_string(info.minInputs) + " to " + std::to_string(info.maxInputs);
      return makeError("arity", std::string(info.name) + " '" + pn.name + "': expects " + want +
                                    " inputs, got " + std::to_string(n),
                       pn.loc.str());
    }
    if (info.numOutputs >= 0 && int(pn.outputs.size()) != info.numOutputs)
      return makeError("arity", std::string(info.name) + " '" + pn.name + "': has " +
                                    std::to_string(info.numOutputs) + " outputs, got " +
                                    std::to_string(pn.outputs.size()),
                       pn.loc.str());
    for (const auto& in : pn.inputs) {
      if (ids.count(in)) continue;
      auto it = producer.find(in);
      if (it == producer.end())
        return makeError("undefined-value", std::string(info.name) + " '" + pn.name +
                                                "': input '" + in + "' is not defined",
                         pn.loc.str());
      succ[it->second].push_back(i);
      ++indeg[i];
    }
  }
  // Stable topological order: Kahn's algorithm, smallest declaration index first.
  std::priority_queue<size_t, std::vector<size_t>, std::greater<>> ready;
  for (size_t i = 0; i < pending_.size(); ++i)
    if (indeg[i] == 0) ready.push(i);
  std::vector<size_t> order;
  while (!ready.empty()) {
    size_t u = ready.top();
    ready.pop();
    order.push_back(u);
    for (size_t v : succ[u])
      if (--indeg[v] == 0) ready.push(v);
  }
  if (order.size() != pending_.size()) {
    std::vector<std::string> names;
    for (const auto& pn : pending_) names.push_back(pn.name);
    size_t first = 0;
    while (indeg[first] == 0) ++first;
    return makeError("cycle", "graph '" + name_ + "' has a cycle: " + describeCycle(succ, names),
                     pending_[first].loc.str());
  }
  // Materialize nodes in order, completing attributes and inferring types.
  for (size_t idx : order) {
    auto& pn = pending_[idx];
    const OpInfo& info = opInfo(pn.op);
    std::string where = std::string(info.name) + " '" + pn.name + "'";
    auto attrs = completeAttrs(pn.op, std::move(pn.attrs));
    if (!attrs) return makeError(attrs.error().id, where + ": " + attrs.error().message, pn.loc.str());
    Node node{pn.op, pn.name, {}, {}, std::move(*attrs), pn.loc};
    std::vector<TensorType> inTypes;
    for (const auto& in : pn.inputs) {
      ValueId v = ids.at(in);
      node.inputs.push_back(v);
      inTypes.push_back(g.values_[size_t(v)].type);
    }
    InferCtx ctx{pn.op, node.attrs, inTypes, groupSize};
    auto types = info.infer(ctx);
    if (!types) return makeError(types.error().id, where + ": " + types.error().message, pn.loc.str());
    if (types->size() != pn.outputs.size())
      return makeError("arity", where + ": produces " + std::to_string(types->size()) +
                                    " outputs, " + std::to_string(pn.outputs.size()) + " named",
                       pn.loc.str());
    NodeId nid = NodeId(g.nodes_.size());
    for (size_t k = 0; k < pn.outputs.size(); ++k) {
      const TensorType& t = (*types)[k];
      SP_TRY(checkType(t, where));
      if (k < pn.declared.size() && pn.declared[k] && !(*pn.declared[k] == t))
        return makeError("type-mismatch", where + ": output '" + pn.outputs[k] + "' is declared " +
                                              pn.declared[k]->str() + " but the op produces " +
                                              t.str(),
                         pn.loc.str());
      ValueId id = ValueId(g.values_.size());
      g.values_.push_back({pn.outputs[k], t, ValueKind::NodeOutput, nid, int(k), pn.loc});
      ids[pn.outputs[k]] = id;
      node.outputs.push_back(id);
    }
    g.nodes_.push_back(std::move(node));
  }
  for (const auto& [name, loc] : outputs_) {
    auto it = ids.find(name);
    if (it == ids.end())
      return makeError("undefined-value", "graph output '" + name + "' is not defined", loc.str());
    g.outputs_.push_back(it->second);
  }
  g.byName_ = std::move(ids);
  g.users_.assign(g.values_.size(), {});
  for (NodeId n = 0; n < NodeId(g.nodes_.size()); ++n)
    for (ValueId v : g.nodes_[size_t(n)].inputs) {
      auto& u = g.users_[size_t(v)];
      if (u.empty() || u.back() != n) u.push_back(n);
    }
  return g;
}

}  // namespace sp::ir

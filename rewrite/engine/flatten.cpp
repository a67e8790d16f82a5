// Flattening of a distributed program into one sequential graph (flatten.h).
#include "rewrite/engine/flatten.h"

#include "ir/collectives.h"
#include "rewrite/verify/lower.h"

namespace sp::rewrite {

std::string flatName(int64_t rank, const std::string& name) { return "r" + std::to_string(rank) + "_" + name; }

namespace {

// Emits the sequential form of collective instances into one builder. Fresh
// names start with "c<instance>_", which no renamed value (r<k>_...) can be.
class Flattener {
 public:
  Flattener(const ir::Program& p, ir::GraphBuilder& b) : p_(p), b_(b) {}

  Status collective(const CollInstance& ci, int idx) {
    SP_TRY(emitCollective(ci, idx));
    if (error_) return *error_;
    return okStatus();
  }

 private:
  Status emitCollective(const CollInstance& ci, int idx) {
    prefix_ = "c" + std::to_string(idx) + "_";
    fresh_ = 0;
    loc_ = node(ci, 0).loc;
    std::vector<std::string> xs;
    for (size_t i = 0; i < ci.members.size(); ++i) xs.push_back(in(ci, i));
    switch (ci.op) {
      case ir::OpKind::AllReduce: {
        SP_ASSIGN(std::string r, reduce(xs, ir::attrStr(ci.attrs, "reduce"), ci));
        for (size_t i = 0; i < xs.size(); ++i) SP_TRY(alias(r, out(ci, i)));
        return okStatus();
      }
      case ir::OpKind::AllGather: {
        std::string c = concat(xs, ir::attrInt(ci.attrs, "dim"));
        for (size_t i = 0; i < xs.size(); ++i) SP_TRY(alias(c, out(ci, i)));
        return okStatus();
      }
      case ir::OpKind::ReduceScatter: {
        SP_ASSIGN(std::string r, reduce(xs, ir::attrStr(ci.attrs, "reduce"), ci));
        for (size_t i = 0; i < xs.size(); ++i) SP_TRY(chunk(r, ci, i, ir::attrInt(ci.attrs, "dim"), i, out(ci, i)));
        return okStatus();
      }
      case ir::OpKind::AllToAll: return allToAll(ci, xs);
      case ir::OpKind::Broadcast: {
        int64_t root = ir::attrInt(ci.attrs, "root");
        if (root < 0 || root >= int64_t(xs.size()))
          return makeError("bad-root", "broadcast root " + std::to_string(root) + " is outside its group", loc_.str());
        for (size_t i = 0; i < xs.size(); ++i) SP_TRY(alias(xs[size_t(root)], out(ci, i)));
        return okStatus();
      }
      default: return makeError("flatten", "unexpected collective " + std::string(ir::opName(ci.op)), loc_.str());
    }
  }

  const ir::Node& node(const CollInstance& ci, size_t i) const { return p_.rank(ci.members[i]).node(ci.nodes[i]); }
  const ir::Graph& graph(const CollInstance& ci, size_t i) const { return p_.rank(ci.members[i]); }
  std::string in(const CollInstance& ci, size_t i) const {
    return flatName(ci.members[i], graph(ci, i).value(node(ci, i).inputs[0]).name);
  }
  std::string out(const CollInstance& ci, size_t i) const {
    return flatName(ci.members[i], graph(ci, i).value(node(ci, i).outputs[0]).name);
  }
  std::string fresh() { return prefix_ + std::to_string(fresh_++); }

  std::string emit(ir::OpKind op, std::vector<std::string> ins, ir::AttrMap attrs = {}) {
    std::string o = fresh();
    Status st = b_.addNode(op, std::move(ins), {o}, std::move(attrs), loc_);
    if (!st.ok() && !error_) error_ = st.error();  // reported by collective()
    return o;
  }
  Status alias(const std::string& from, const std::string& to) {
    return b_.addNode(ir::OpKind::Identity, {from}, {to}, {}, loc_);
  }
  std::string concat(const std::vector<std::string>& xs, int64_t dim) {
    return xs.size() == 1 ? xs[0] : emit(ir::OpKind::Concat, xs, {{"axis", dim}});
  }

  Result<std::string> reduce(const std::vector<std::string>& xs, const std::string& red, const CollInstance& ci) {
    SP_ASSIGN(ir::ReduceOp op, ir::parseReduceOp(red));
    ir::OpKind k = op == ir::ReduceOp::Max ? ir::OpKind::Max : op == ir::ReduceOp::Min ? ir::OpKind::Min : ir::OpKind::Add;
    std::string acc = xs[0];
    for (size_t i = 1; i < xs.size(); ++i) acc = emit(k, {acc, xs[i]});
    if (op != ir::ReduceOp::Avg) return acc;
    ir::DType dt = graph(ci, 0).value(node(ci, 0).inputs[0]).type.dtype;
    std::string g = emit(ir::OpKind::Constant, {}, {{"value", ir::Tensor::scalar(dt, double(xs.size()))}});
    return emit(ir::OpKind::Div, {acc, g});
  }

  // Chunk k (of the group size) of `x` along `dim`, from the type of member
  // `i`'s input.
  Status chunk(const std::string& x, const CollInstance& ci, size_t i, int64_t dim, size_t k, const std::string& to) {
    const ir::TensorType& t = graph(ci, i).value(node(ci, i).inputs[0]).type;
    int64_t d = dim < 0 ? dim + int64_t(t.shape.size()) : dim;
    if (d < 0 || d >= int64_t(t.shape.size()) || !t.shape[size_t(d)].isConcrete())
      return makeError("flatten", "flattening " + std::string(ir::opName(ci.op)) + " needs a concrete size on dim " +
                                      std::to_string(dim) + " of " + t.str(), loc_.str());
    int64_t g = int64_t(ci.members.size()), n = t.shape[size_t(d)].value();
    if (n % g) return makeError("flatten", t.str() + " does not split in " + std::to_string(g), loc_.str());
    int64_t c = ci.op == ir::OpKind::ReduceScatter || ci.op == ir::OpKind::AllToAll ? n / g : n;
    ir::AttrMap a = {{"starts", std::vector<int64_t>{int64_t(k) * c}},
                     {"ends", std::vector<int64_t>{int64_t(k + 1) * c}},
                     {"axes", std::vector<int64_t>{d}}};
    return b_.addNode(ir::OpKind::Slice, {x}, {to}, a, loc_);
  }

  Status allToAll(const CollInstance& ci, const std::vector<std::string>& xs) {
    int64_t sd = ir::attrInt(ci.attrs, "split_dim"), cd = ir::attrInt(ci.attrs, "concat_dim");
    for (size_t j = 0; j < xs.size(); ++j) {
      std::vector<std::string> parts;
      for (size_t i = 0; i < xs.size(); ++i) {
        std::string s = fresh();
        SP_TRY(chunk(xs[i], ci, i, sd, j, s));
        parts.push_back(s);
      }
      SP_TRY(alias(concat(parts, cd), out(ci, j)));
    }
    return okStatus();
  }

  const ir::Program& p_;
  ir::GraphBuilder& b_;
  std::string prefix_;
  int fresh_ = 0;
  ir::SourceLoc loc_;
  std::optional<Error> error_;
};

Status addRank(const ir::Program& p, const DistModel& m, int64_t r, ir::GraphBuilder& b) {
  const ir::Graph& g = p.rank(r);
  auto nm = [&](ir::ValueId v) { return flatName(r, g.value(v).name); };
  for (ir::ValueId v : g.inputs()) SP_TRY(b.addInput(nm(v), g.value(v).type, g.value(v).loc));
  for (ir::ValueId v : g.params()) {
    const ir::Tensor* data = g.paramData(v);
    SP_TRY(b.addParam(nm(v), g.value(v).type, data ? std::optional<ir::Tensor>(*data) : std::nullopt, g.value(v).loc));
  }
  for (ir::NodeId n = 0; n < ir::NodeId(g.nodes().size()); ++n) {
    const ir::Node& node = g.node(n);
    if (node.op == ir::OpKind::Send || m.collOf[size_t(r)].count(n)) continue;
    if (node.op == ir::OpKind::Recv) {
      auto [src, send] = m.recvFrom[size_t(r)].at(n);
      const ir::Graph& sg = p.rank(src);
      SP_TRY(b.addNode(ir::OpKind::Identity, {flatName(src, sg.value(sg.node(send).inputs[0]).name)},
                       {nm(node.outputs[0])}, {}, node.loc, flatName(r, node.name)));
      continue;
    }
    std::vector<std::string> ins, outs;
    for (ir::ValueId v : node.inputs) ins.push_back(nm(v));
    for (ir::ValueId v : node.outputs) outs.push_back(nm(v));
    SP_TRY(b.addNode(node.op, ins, outs, node.attrs, node.loc, flatName(r, node.name)));
  }
  return okStatus();
}

}  // namespace

Result<ir::Graph> flattenProgram(const ir::Program& p) {
  SP_ASSIGN(DistModel m, lowerProgram(p));
  ir::GraphBuilder b("flat");
  for (int64_t r = 0; r < p.worldSize(); ++r) SP_TRY(addRank(p, m, r, b));
  Flattener f(p, b);
  for (size_t i = 0; i < m.colls.size(); ++i) SP_TRY(f.collective(m.colls[i], int(i)));
  for (int64_t r = 0; r < p.worldSize(); ++r)
    for (ir::ValueId v : p.rank(r).outputs()) SP_TRY(b.addOutput(flatName(r, p.rank(r).value(v).name)));
  return std::move(b).finish();
}

Result<RelationFile> identityRelations(const ir::Program& p) {
  std::string text;
  for (int64_t r = 0; r < p.worldSize(); ++r) {
    const ir::Graph& g = p.rank(r);
    std::vector<ir::ValueId> leaves = g.inputs();
    leaves.insert(leaves.end(), g.params().begin(), g.params().end());
    for (ir::ValueId v : leaves)
      text += "dist[" + std::to_string(r) + "]." + relName(g.value(v).name) + " = seq." +
              relName(flatName(r, g.value(v).name)) + "\n";
  }
  return parseRelations(text, "identity.rel");
}

}  // namespace sp::rewrite

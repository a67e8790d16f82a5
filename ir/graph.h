#pragma once
// Graphs: SSA values, immutable nodes, named inputs, parameters and outputs.
// Graphs are built only through GraphBuilder, which validates names, arity,
// attributes, acyclicity (Boost Graph topological sort) and shapes.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ir/op.h"

namespace sp::ir {

using ValueId = int32_t;
using NodeId = int32_t;

// Where a node or value came from: "model.py:252" of a capture, an ONNX node
// name, or a text IR line:col.
struct SourceLoc {
  std::string file;    // file path; empty if unknown
  int line = 0;        // 1-based; 0 if unknown
  int col = 0;         // 1-based; 0 if unknown
  std::string detail;  // ONNX node name, function name, source code line
  std::string str() const;  // "gpt.py:252", "node 'MatMul_3'", "ir.sp:4:7"
  bool empty() const { return file.empty() && line == 0 && detail.empty(); }
};

enum class ValueKind : uint8_t { Input, Param, NodeOutput };

struct Value {
  std::string name;
  TensorType type;
  ValueKind kind = ValueKind::NodeOutput;
  NodeId producer = -1;  // for NodeOutput
  int outIndex = 0;
  SourceLoc loc;
};

struct Node {
  OpKind op;
  std::string name;  // unique within the graph (defaults to first output's name)
  std::vector<ValueId> inputs;
  std::vector<ValueId> outputs;
  AttrMap attrs;     // complete: schema defaults filled in
  SourceLoc loc;
};

class Graph {
 public:
  const std::string& name() const { return name_; }
  const std::vector<Value>& values() const { return values_; }
  const Value& value(ValueId id) const { return values_[size_t(id)]; }
  // Nodes in a topological order (stable: ties keep declaration order).
  const std::vector<Node>& nodes() const { return nodes_; }
  const Node& node(NodeId id) const { return nodes_[size_t(id)]; }
  const std::vector<ValueId>& inputs() const { return inputs_; }
  const std::vector<ValueId>& params() const { return params_; }
  const std::vector<ValueId>& outputs() const { return outputs_; }
  // Parameter data where the model carries it (ONNX initializers).
  const Tensor* paramData(ValueId id) const;
  std::optional<ValueId> findValue(const std::string& name) const;
  // Nodes reading each value, in node order.
  const std::vector<NodeId>& users(ValueId id) const { return users_[size_t(id)]; }
  // Symbols used in input and parameter shapes.
  std::vector<std::string> symbols() const;

 private:
  friend class GraphBuilder;
  std::string name_;
  std::vector<Value> values_;
  std::vector<Node> nodes_;
  std::vector<ValueId> inputs_, params_, outputs_;
  std::map<ValueId, Tensor> paramData_;
  std::map<std::string, ValueId> byName_;
  std::vector<std::vector<NodeId>> users_;
};

class GraphBuilder {
 public:
  explicit GraphBuilder(std::string name) : name_(std::move(name)) {}

  Status addInput(const std::string& name, TensorType type, SourceLoc loc = {});
  Status addParam(const std::string& name, TensorType type, std::optional<Tensor> data = std::nullopt,
                  SourceLoc loc = {});
  // Output names must be fresh. If declared types are given (text IR, ONNX
  // value_info), they must equal the inferred ones.
  Status addNode(OpKind op, std::vector<std::string> inputs, std::vector<std::string> outputs,
                 AttrMap attrs, SourceLoc loc = {}, std::string nodeName = {},
                 std::vector<std::optional<TensorType>> declared = {});
  Status addOutput(const std::string& name, SourceLoc loc = {});

  // Resolves names, sorts topologically (a cycle is an error naming a node on
  // it), completes attributes and infers every type. groupSize is needed for
  // collectives whose output shape depends on the group size.
  Result<Graph> finish(const GroupSizeFn* groupSize = nullptr) &&;

 private:
  struct PendingNode {
    OpKind op;
    std::string name;
    std::vector<std::string> inputs, outputs;
    AttrMap attrs;
    SourceLoc loc;
    std::vector<std::optional<TensorType>> declared;
  };
  struct PendingLeaf {
    std::string name;
    TensorType type;
    bool isParam;
    std::optional<Tensor> data;
    SourceLoc loc;
  };
  Status claimName(const std::string& name, const SourceLoc& loc);

  std::string name_;
  std::vector<PendingLeaf> leaves_;
  std::vector<PendingNode> pending_;
  std::vector<std::pair<std::string, SourceLoc>> outputs_;
  std::map<std::string, SourceLoc> defined_;
  std::optional<Error> deferred_;
};

// Validate a tensor type: dims non-negative and total size within kMaxElements.
Status checkType(const TensorType& t, const std::string& what);

}  // namespace sp::ir

#pragma once
// Internal to the ONNX frontend: the import state shared by the graph walk
// (onnx_import.cpp), the op mapping table (onnx_ops.cpp) and constant/shape
// folding (onnx_fold.cpp). Not part of the library's public API.
#include <onnx/onnx_pb.h>

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "frontend/onnx_import.h"
#include "ir/graph.h"

namespace sp::frontend::onnx_detail {

// Values of a small integer tensor (rank 0 or 1) known at import time, possibly
// symbolic: what Shape -> Gather -> Concat arithmetic computes from dims.
struct KnownInts {
  std::vector<ir::Dim> vals;
  bool scalar = false;
  bool concrete() const;
};

// One ONNX value (or an importer temporary) during import.
struct Val {
  ir::TensorType type;
  std::optional<ir::Tensor> konst;  // value known at import time
  std::optional<KnownInts> known;   // symbolic integer values (shape arithmetic)
  std::string irName;               // name in the IR graph; empty until materialized
  bool initializer = false;         // an ONNX initializer (becomes a parameter)
};

class Importer {
 public:
  Importer(std::string path, OnnxOptions opts, int64_t opset, ir::GraphBuilder& b)
      : path_(std::move(path)), opts_(std::move(opts)), opset_(opset), b_(b) {}

  // ---- the node being imported ----
  void setNode(const onnx::NodeProto* n, size_t index);
  const onnx::NodeProto& node() const { return *node_; }
  const std::string& nodeName() const { return nodeName_; }
  std::string opType() const { return node_ ? node_->op_type() : std::string("output"); }
  int64_t opset() const { return opset_; }
  const OnnxOptions& options() const { return opts_; }
  std::string location() const { return path_ + ": node '" + nodeName_ + "'"; }
  Error err(const std::string& id, const std::string& msg) const;
  ir::SourceLoc loc() const;

  // ---- inputs and outputs of the current node ----
  size_t numInputs() const;
  bool hasInput(size_t i) const;              // present and not the empty name
  Result<std::string> input(size_t i) const;  // name, error if absent
  const Val& val(const std::string& name) const { return vals_.at(name); }
  size_t numOutputs() const;
  bool hasOutput(size_t i) const;
  std::string output(size_t i) const;

  // Integer values of an input that must be known at import time (shape,
  // starts, axes, k...): constants or folded shape arithmetic. Errors name
  // the node and what the input is for.
  Result<KnownInts> knownInts(size_t i, const std::string& what) const;
  Result<std::vector<int64_t>> constInts(size_t i, const std::string& what) const;
  Result<ir::Tensor> constTensor(size_t i, const std::string& what) const;
  Result<double> constScalar(size_t i, const std::string& what) const;

  // ---- defining values ----
  bool defined(const std::string& name) const { return vals_.count(name) != 0; }
  Status define(const std::string& name, Val v);
  Status alias(const std::string& outName, const std::string& inName);
  std::string fresh(const std::string& hint);
  // Emit an IR op reading `inputs` (value names); types are inferred now (the
  // error names the ONNX node). Folds to a constant when every input is
  // foldable and the result is small. Returns the output names.
  Result<std::vector<std::string>> emit(ir::OpKind op, const std::vector<std::string>& inputs,
                                        ir::AttrMap attrs, std::vector<std::string> outputs = {});
  Result<std::string> emit1(ir::OpKind op, const std::vector<std::string>& inputs,
                            ir::AttrMap attrs, const std::string& output = {});
  // A constant value (scalar or tensor) as a temporary.
  Result<std::string> constant(ir::Tensor t, const std::string& hint = "const");
  // Make a value exist in the IR graph; returns its IR name.
  Result<std::string> materialize(const std::string& name);

  // ---- whole-graph steps ----
  Status addGraphInput(const std::string& name, ir::TensorType type);
  Status addInitializer(const std::string& name, ir::Tensor data);
  void declare(const std::string& name, ir::TensorType type) { declared_[name] = std::move(type); }
  Status checkDeclared(const std::string& name) const;
  Status addGraphOutput(const std::string& name);
  void reserveName(const std::string& name) { reserved_.insert(name); }

 private:
  bool foldable(const Val& v) const;
  Result<std::string> materializeKnown(const std::string& name, const KnownInts& k);

  std::string path_;
  OnnxOptions opts_;
  int64_t opset_;
  ir::GraphBuilder& b_;
  const onnx::NodeProto* node_ = nullptr;
  std::string nodeName_;
  std::map<std::string, Val> vals_;
  std::map<std::string, ir::TensorType> declared_;  // ONNX value_info after shape inference
  std::set<std::string> reserved_;                  // all ONNX names, for fresh()
  int64_t freshCounter_ = 0;
};

// ---- conversions (onnx_fold.cpp) ----
Result<ir::DType> dtypeFromOnnx(int32_t t, const std::string& what);
// TensorProto -> Tensor; external data is resolved before (raw_data).
Result<ir::Tensor> tensorFromProto(const onnx::TensorProto& t, const std::string& what);
// ONNX type -> IR type; unnamed unknown dims get symbols "<prefix>_<i>".
Result<ir::TensorType> typeFromOnnx(const onnx::TypeProto& t, const std::string& what,
                                    const std::string& symPrefix);
ir::Tensor tensorFromInts(const std::vector<int64_t>& v, bool scalar,
                          ir::DType dt = ir::DType::I64);
std::vector<int64_t> intsOfTensor(const ir::Tensor& t);
std::optional<KnownInts> knownOfTensor(const ir::Tensor& t);

// Symbolic integer arithmetic for known values (onnx_fold.cpp). Returns
// nullopt when the result is not representable (then the op is emitted).
std::optional<KnownInts> foldKnown(const std::string& opType, Importer& im);

// The op mapping table (onnx_ops.cpp): maps the current node, or errors.
Status mapNode(Importer& im);

}  // namespace sp::frontend::onnx_detail

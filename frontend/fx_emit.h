#pragma once
// The state of one capture being mapped to IR: FX names -> IR values with
// their types, the IR nodes emitted so far, and the helpers op mappings use
// (argument access, constants, casts, type promotion). Every FX node carries
// its declared type; mappings pass it to GraphBuilder, which checks it
// against shape inference.
#include <map>
#include <set>
#include <string>
#include <vector>

#include "frontend/fx_constants.h"
#include "frontend/fx_import.h"
#include "frontend/fx_parser.h"

namespace sp::frontend::fx {

struct TRef {
  std::string name;  // IR value name
  ir::TensorType type;
  int64_t rank() const { return int64_t(type.shape.size()); }
  ir::DType dtype() const { return type.dtype; }
};

struct PendingOp {
  ir::OpKind op;
  std::vector<std::string> inputs, outputs;
  ir::AttrMap attrs;
  ir::SourceLoc loc;
  std::vector<std::optional<ir::TensorType>> declared;
  std::string captureLoc;  // "fw.r0.py:57"
};

struct PendingLeaf {
  std::string name;
  ir::TensorType type;
  bool isParam = false;
  std::optional<ir::Tensor> data;
  ir::SourceLoc loc;
};

class Emitter {
 public:
  Emitter(const Module& m, const FxOptions& opts, int64_t rank);

  // ---- the call being mapped (set by the importer) ----
  const Expr* call = nullptr;     // the Call expression
  std::string op;                 // "aten.mm.default"
  std::string captureLoc;         // "path:line"
  ir::SourceLoc src;              // framework source of the node
  std::vector<std::string> outNames;
  std::vector<std::optional<ir::TensorType>> outTypes;
  std::vector<bool> outBound;
  std::string nodeName;           // FX name of the call node
  std::string code;               // the `code:` text of its source comment
  std::string capturePath;        // the capture file

  // ---- arguments: positional index or keyword name ----
  const Expr* arg(size_t i, const char* kw) const;  // nullptr if absent
  bool has(size_t i, const char* kw) const;
  Result<TRef> tensor(size_t i, const char* kw);
  Result<TRef> tensorOf(const Expr& e);
  Result<std::optional<TRef>> optTensor(size_t i, const char* kw);
  Result<std::vector<std::optional<TRef>>> tensorList(size_t i, const char* kw);
  Result<int64_t> integer(size_t i, const char* kw, std::optional<int64_t> dflt = std::nullopt);
  Result<std::optional<int64_t>> optInteger(size_t i, const char* kw);
  Result<double> number(size_t i, const char* kw, std::optional<double> dflt = std::nullopt);
  Result<std::vector<int64_t>> ints(size_t i, const char* kw, std::optional<std::vector<int64_t>> dflt = std::nullopt);
  Result<std::string> string(size_t i, const char* kw, std::optional<std::string> dflt = std::nullopt);
  Result<bool> boolean(size_t i, const char* kw, bool dflt);
  Result<std::optional<ir::DType>> dtypeArg(size_t i, const char* kw);
  // A tensor or a Python number (wrapped as a scalar operand).
  struct Operand {
    std::optional<TRef> t;
    double value = 0;
    bool isInt = false, isBool = false;
  };
  Result<Operand> operand(size_t i, const char* kw);

  // ---- outputs ----
  bool wanted(size_t k) const { return k < outNames.size() && !outNames[k].empty(); }
  Result<ir::TensorType> outType(size_t k) const;
  // Emits the node producing FX output k (named and typed as declared).
  Status out(size_t k, ir::OpKind op, std::vector<TRef> in, ir::AttrMap attrs = {});
  // Output k is an existing value: the FX name becomes an alias of v when
  // the declared type is v's (no node), else a cast/identity node binds it.
  Status outValue(size_t k, const TRef& v);
  // One node producing outputs 0..n-1 (unwanted ones get fresh names).
  Status outAll(ir::OpKind op, std::vector<TRef> in, ir::AttrMap attrs, size_t n);
  // Binds output k to op(in) of computed type `type`, adding a cast and/or a
  // reshape when the declared type differs (e.g. f32 statistics of f16 data).
  Result<TRef> bind(size_t k, ir::OpKind op, std::vector<TRef> in, ir::AttrMap attrs,
                    ir::TensorType type);

  // ---- intermediate nodes (type computed by the mapping, checked by the builder) ----
  TRef emit(ir::OpKind op, std::vector<TRef> in, ir::AttrMap attrs, ir::TensorType type,
            const std::string& tag = "");
  TRef constant(ir::DType t, double v);
  TRef constantTensor(const ir::Tensor& t);
  TRef cast(const TRef& x, ir::DType t);
  TRef scalarOrCast(const Operand& o, ir::DType t);  // operand as a tensor of dtype t
  TRef reshape(const TRef& x, const ir::Shape& s);
  TRef expand(const TRef& x, const ir::Shape& s);
  TRef unsqueeze(const TRef& x, std::vector<int64_t> axes);
  TRef binary(ir::OpKind op, const TRef& a, const TRef& b);  // same dtype, broadcasting
  TRef unary(ir::OpKind op, const TRef& a);
  TRef reduce(ir::OpKind op, const TRef& x, std::vector<int64_t> axes, bool keep);

  Error error(const std::string& id, const std::string& msg) const;
  std::string fresh(const std::string& base);

  // ---- graph state ----
  std::map<std::string, TRef> env;               // FX name -> IR value
  std::map<std::string, std::string> attrs;      // FX name -> `self.<attr>` (type unresolved)
  std::map<std::string, std::string> syms;       // FX name -> SymInt text ("s0", "u0 >= 0")
  std::vector<PendingLeaf> leaves;
  std::vector<PendingOp> ops;
  // IR values that are repeat_interleave indices [0,..,0, 1,..,1, ...] (each
  // of n positions `times` times): index_select by one is a repeat view.
  struct RepeatIndex {
    int64_t times = 1, n = 0;
  };
  std::map<std::string, RepeatIndex> repeatIndices;
  const FxOptions& opts;
  const int64_t rank;
  int64_t worldSize = 1;  // ranks of the program (1 for a single graph)

  // Resolves a `self.<attr>` constant once its type is known (from an
  // identity-like consumer): a parameter, with data from FxOptions if given.
  Result<TRef> resolveAttr(const std::string& fxName, const ir::TensorType& type);
  // The IR group a c10d group name maps to (fx_groups.cpp), and its size
  // for this rank ("self": 1).
  Result<std::string> groupFor(const std::string& c10dGroup) const;
  Result<int64_t> groupSize(const std::string& group) const;
  // The pending op that defines IR value `name`; nullptr for leaves.
  const PendingOp* producer(const std::string& name) const;
  // The value every element of an IR value holds when it is a scalar
  // constant broadcast, viewed or cast (empty/full/fill_ buffers), else none.
  std::optional<double> uniformValue(const TRef& x) const;

 private:
  std::set<std::string> names_;
  std::map<std::pair<int, std::string>, TRef> constants_;
  std::optional<std::vector<ConstantSite>> sites_;  // loaded on first use
};

// ATen type promotion (torch.result_type) over operands.
ir::DType promoteTypes(ir::DType a, ir::DType b);
ir::DType resultType(const std::vector<Emitter::Operand>& ops);
// torch.can_cast: whether an in-place op may write a result of dtype `from`
// into a tensor of dtype `to` (not a float into an integer, nor anything
// but bool into bool).
bool canCast(ir::DType from, ir::DType to);
// torch's name of a dtype in its messages ("Float", "Long", "BFloat16").
std::string torchTypeName(ir::DType t);
std::optional<ir::Shape> broadcastShapes(const ir::Shape& a, const ir::Shape& b);

}  // namespace sp::frontend::fx

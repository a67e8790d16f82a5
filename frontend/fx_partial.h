#pragma once
// Partial import of captures with data-dependent sizes (FxOptions::partial,
// docs/fx-import.md "Data-dependent sizes"): which FX names the import
// leaves out, and for each the node that made it data-dependent. A name is
// left out when its statement's node has a data-dependent result size (the
// mapping failed with fx-data-dependent), when its statement reads a name
// left out, or when a statement left out mutated its storage in place.
#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "frontend/fx_import.h"
#include "frontend/fx_parser.h"

namespace sp::frontend::fx {

// A node whose result size depends on tensor values.
struct DropCause {
  std::string op;        // "torch.where", "aten.nonzero.default", "operator.getitem"
  std::string node;      // its FX name
  std::string location;  // "capture:line"
  Error error;           // the fx-data-dependent error the mapping gave
};

class DroppedValues {
 public:
  // Records a data-dependent node; returns its cause id (ids grow in
  // statement order, so the smallest is the earliest).
  size_t addCause(DropCause c);
  // Leaves `name` out because of `cause`, keeping the earlier cause when it
  // is already left out.
  void drop(const std::string& name, size_t cause);
  // `name` is bound again by a statement the import translated.
  void keep(const std::string& name) { dropped_.erase(name); }
  // The earliest cause among the names `v` reads (its Name expressions and
  // the receivers of its method calls); none when it reads no dropped name.
  std::optional<size_t> reads(const Expr& v) const;
  std::optional<size_t> causeOf(const std::string& name) const;
  const DropCause& cause(size_t id) const { return causes_.at(id); }
  bool any() const { return !causes_.empty(); }

 private:
  std::vector<DropCause> causes_;
  std::map<std::string, size_t> dropped_;
};

// The callee a statement's value names, for messages: "torch.where",
// "Tensor.nonzero" (a method of a tensor in `tensors`), "aten.nonzero.default"
// (an ATen op), "operator.getitem" (a subscript).
template <class IsTensor>
std::string calleeName(const Expr& v, const IsTensor& isTensor) {
  if (v.kind == Expr::Kind::Subscript) return "operator.getitem";
  if (v.kind != Expr::Kind::Call) return v.str();
  if (v.s.rfind("torch.ops.", 0) == 0) return v.s.substr(10);
  size_t dot = v.s.find('.');
  if (dot != std::string::npos && isTensor(v.s.substr(0, dot))) return "Tensor." + v.s.substr(dot + 1);
  return v.s;
}

// The tensor an ATen in-place op mutates (`torch.ops.aten.fill_.Scalar(x,
// ...)`: its first argument); none for other calls. Torch-level in-place
// calls are the importer's torchCallInfo.
std::optional<std::string> atenMutatedArg(const Expr& v);

// Whether a call communicates across ranks (a c10d collective; not
// wait_tensor, which only waits for one).
bool isCollectiveCall(const Expr& v);

}  // namespace sp::frontend::fx

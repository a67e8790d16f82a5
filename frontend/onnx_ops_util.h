#pragma once
// Internal to the ONNX frontend: helpers shared by the op mapping files.
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "frontend/onnx_context.h"

namespace sp::frontend::onnx_detail {

using Handler = std::function<Status(Importer&)>;

// Attributes of the current node, with defaults.
bool hasAttr(const Importer& im, const std::string& name);
int64_t attrInt(const Importer& im, const std::string& name, int64_t def);
double attrFloat(const Importer& im, const std::string& name, double def);
std::string attrStr(const Importer& im, const std::string& name, const std::string& def);
std::vector<int64_t> attrInts(const Importer& im, const std::string& name);

// A scalar constant of the dtype of `like`.
Result<std::string> scalarLike(Importer& im, const std::string& like, double v);
// Product of dims [from, to) of a shape.
ir::Dim product(const ir::Shape& s, int64_t from, int64_t to);
Result<int64_t> normAxisAt(const Importer& im, int64_t axis, int64_t rank);
// arange(n) as i64 for a symbolic n: reduce_sum(trilu(ones[n, n])) - 1.
Result<std::string> symbolicArange(Importer& im, const ir::Dim& n);

// Shape arithmetic on known integer values: defines the node's output and
// returns true when the node folded (onnx_ops_layout.cpp).
Result<bool> foldShapeArithmetic(Importer& im);

// Layout and source ops (onnx_ops_layout.cpp).
Status reshape(Importer& im);
Status slice(Importer& im);
Status split(Importer& im);
Status expand(Importer& im);
Status squeeze(Importer& im);
Status unsqueeze(Importer& im);
Status constantOfShape(Importer& im);
Status range(Importer& im);

// Activations decomposed into IR core ops (onnx_ops_util.cpp).
void addActivations(std::map<std::string, Handler>& m);

}  // namespace sp::frontend::onnx_detail

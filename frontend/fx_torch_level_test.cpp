// Dynamo torch-level graphs (fx_torch_ops.cpp): every callable of the
// torch-level table is imported in a torch-level graph and in the ATen-level
// graph torch would lower it to, both are run on the CPU executor on the
// same inputs, and their outputs must agree. Rows are (torch expression,
// ATen call, declared type); a coverage test requires a row for every
// callable of the table, and error tests pin the unsupported-callable
// diagnostics.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>

#include "frontend/fx_import.h"
#include "frontend/fx_ops.h"
#include "frontend/fx_test_util.h"
#include "frontend/fx_torch_ops.h"
#include "ir/interpreter.h"

namespace sp::frontend {
namespace {

using ir::DType;
using ir::Tensor;
using fx_test::noise;
using fx_test::typed;
using fx_test::values;

struct Row {
  const char* torch;  // torch-level expression over the inputs below
  const char* aten;   // the ATen-level statement value ("aten.exp.default(x)"), or
                      // several statements separated by ';' whose last target is the row's
  const char* type;   // declared type of the row's value
};

// The inputs every row graph takes (Dynamo's `L_<name>_` arguments, each
// aliased `<name> = L_<name>_` as Dynamo's `l_x_ = L_x_` lines).
const char* kInputs[][2] = {
    {"x", "f32[2, 3, 4]"},  {"y", "f32[2, 3, 4]"},  {"p", "f32[2, 3, 4]"},  {"m", "b8[2, 3, 4]"},
    {"n", "b8[2, 3, 4]"},   {"w", "f32[3, 4]"},     {"k", "f32[4, 5]"},     {"bb", "f32[2, 4, 5]"},
    {"c3", "f32[2, 3, 5]"}, {"c2", "f32[3, 5]"},    {"w2", "f32[5, 4]"},    {"b5", "f32[5]"},
    {"g4", "f32[4]"},       {"b4", "f32[4]"},       {"s", "f32[2, 1, 4]"},  {"i", "i64[2]"},
    {"g", "i64[2, 3, 2]"},  {"q", "f32[2, 2, 3, 4]"}, {"kk", "f32[2, 2, 3, 4]"}, {"v", "f32[2, 2, 3, 4]"},
    {"am", "b8[3, 3]"},     {"fm", "f32[2, 1, 3, 3]"}, {"lg", "f32[4, 5]"},  {"tg", "i64[4]"},
    {"wt", "f32[5]"},       {"ls", "f32[4, 5]"},       {"sa", "f32[2, 4]"},
};

std::string header() { return fx_test::dynamoHeader(kInputs); }

// The torch-level graph of the rows (node r<k> per row) and its ATen twin.
std::pair<std::string, std::string> graphs(const std::vector<Row>& rows) {
  std::string t = header(), a = header(), ret;
  for (size_t k = 0; k < rows.size(); ++k) {
    std::string name = "r" + std::to_string(k);
    t += "         # File: /work/model/m.py:" + std::to_string(10 + k) + " in forward, code: " + rows[k].torch + "\n";
    t += "        " + name + ": \"" + rows[k].type + "\" = " + rows[k].torch + "\n";
    // ATen: `a; b; c` are statements `<name>_0 = a`, ..., the last one `<name>`;
    // `$` in a statement names the previous one, `#` a tuple read.
    std::vector<std::string> parts;
    std::string s = rows[k].aten;
    for (size_t at; (at = s.find(';')) != std::string::npos; s = s.substr(at + 1)) parts.push_back(s.substr(0, at));
    parts.push_back(s);
    std::string prev;
    for (size_t j = 0; j < parts.size(); ++j) {
      std::string p = std::regex_replace(parts[j], std::regex("^ +"), "");
      p = std::regex_replace(p, std::regex("\\$"), prev);
      std::string target = j + 1 == parts.size() ? name : name + "_" + std::to_string(j);
      std::string type = j + 1 == parts.size() ? rows[k].type : "";
      if (p[0] == '"') {  // `"f32[4, 5]" = aten...`: an intermediate's type
        type = p.substr(1, p.find('"', 1) - 1);
        p = p.substr(p.find('=') + 2);
      }
      if (p.rfind("aten.", 0) == 0) p = "torch.ops." + p;
      a += "        " + target + (type.empty() ? "" : ": \"" + type + "\"") + " = " + p + "\n";
      prev = target;
    }
    ret += name + ", ";
  }
  t += "        return (" + ret + ")\n";
  a += "        return (" + ret + ")\n";
  return {t, a};
}

Tensor input(const std::string& name, const std::string& type, uint32_t seed) {
  auto tt = fx::parseTensorAnnotation(type);
  EXPECT_TRUE(tt.ok());
  std::vector<int64_t> dims;
  for (const auto& d : tt->shape) dims.push_back(d.value());
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  std::vector<double> v = noise(size_t(n), seed);
  for (auto& x : v) {
    if (name == "p") x = std::exp(x);                          // positive
    else if (name == "tg") x = std::floor((x + 1) * 2.5);     // classes 0..4
    else if (tt->dtype == DType::I64) x = x > 0 ? 1 : 0;      // indices 0..1
    else if (tt->dtype == DType::Bool) x = x > 0;
  }
  if (name == "am")  // a causal-like mask with a key per row
    for (size_t r = 0; r < 3; ++r) v[r * 3] = 1;
  return typed(tt->dtype, dims, v);
}

void expectSameResults(const std::vector<Row>& rows, const std::string& what) {
  auto [torchText, atenText] = graphs(rows);
  auto tg = importFxText(torchText, what + ".torch.py");
  ASSERT_TRUE(tg.ok()) << tg.error().str() << "\n" << torchText;
  auto ag = importFxText(atenText, what + ".aten.py");
  ASSERT_TRUE(ag.ok()) << ag.error().str() << "\n" << atenText;
  ir::TensorMap in;
  uint32_t seed = 1;
  for (const auto& [n, t] : kInputs) in["L_" + std::string(n) + "_"] = input(n, t, seed++);
  // dropout streams (graph inputs `<node>_rng`) are shared by name
  for (const auto& g : {&*tg, &*ag})
    for (auto id : g->inputs()) {
      const auto& val = g->value(id);
      if (in.count(val.name)) continue;
      std::vector<int64_t> dims;
      for (const auto& d : val.type.shape) dims.push_back(d.value());
      int64_t n = 1;
      for (int64_t d : dims) n *= d;
      auto u = noise(size_t(n), seed++);
      for (auto& x : u) x = (x + 1) / 2;
      in[val.name] = typed(val.type.dtype, dims, u);
    }
  auto to = ir::runGraph(*tg, in);
  ASSERT_TRUE(to.ok()) << to.error().str();
  auto ao = ir::runGraph(*ag, in);
  ASSERT_TRUE(ao.ok()) << ao.error().str();
  for (size_t k = 0; k < rows.size(); ++k) {
    std::string name = "r" + std::to_string(k);
    ASSERT_TRUE(to->count(name) && ao->count(name)) << name;
    const Tensor& a = to->at(name);
    const Tensor& b = ao->at(name);
    EXPECT_EQ(a.type(), b.type()) << rows[k].torch;
    auto va = values(a), vb = values(b);
    ASSERT_EQ(va.size(), vb.size()) << rows[k].torch;
    for (size_t j = 0; j < va.size(); ++j)
      EXPECT_NEAR(va[j], vb[j], 1e-4 * (1 + std::abs(vb[j]))) << rows[k].torch << " [" << j << "]";
  }
}

// ------------------------------------------------------------------ the rows

const std::vector<Row> kElementwise = {
    {"x + y", "aten.add.Tensor(x, y)", "f32[2, 3, 4]"},
    {"0.5 + x", "aten.add.Tensor(x, 0.5)", "f32[2, 3, 4]"},
    {"torch.add(x, y, alpha = 2)", "aten.add.Tensor(x, y, alpha = 2)", "f32[2, 3, 4]"},
    {"x.add(w)", "aten.add.Tensor(x, w)", "f32[2, 3, 4]"},
    {"x - y", "aten.sub.Tensor(x, y)", "f32[2, 3, 4]"},
    {"1.0 - x", "aten.rsub.Scalar(x, 1.0)", "f32[2, 3, 4]"},
    {"torch.sub(x, y)", "aten.sub.Tensor(x, y)", "f32[2, 3, 4]"},
    {"x.sub(y, alpha = 0.5)", "aten.sub.Tensor(x, y, alpha = 0.5)", "f32[2, 3, 4]"},
    {"torch.subtract(x, 2)", "aten.sub.Tensor(x, 2)", "f32[2, 3, 4]"},
    {"torch.rsub(x, y)", "aten.rsub.Tensor(x, y)", "f32[2, 3, 4]"},
    {"x.rsub(2.0)", "aten.rsub.Scalar(x, 2.0)", "f32[2, 3, 4]"},
    {"x * y", "aten.mul.Tensor(x, y)", "f32[2, 3, 4]"},
    {"torch.mul(x, 0.5)", "aten.mul.Tensor(x, 0.5)", "f32[2, 3, 4]"},
    {"x.mul(y)", "aten.mul.Tensor(x, y)", "f32[2, 3, 4]"},
    {"torch.multiply(x, y)", "aten.mul.Tensor(x, y)", "f32[2, 3, 4]"},
    {"x / p", "aten.div.Tensor(x, p)", "f32[2, 3, 4]"},
    {"2.0 / p", "\"f32[2, 3, 4]\" = aten.reciprocal.default(p); aten.mul.Tensor($, 2.0)", "f32[2, 3, 4]"},
    {"torch.div(x, p)", "aten.div.Tensor(x, p)", "f32[2, 3, 4]"},
    {"x.div(2.0)", "aten.div.Tensor(x, 2.0)", "f32[2, 3, 4]"},
    {"torch.divide(x, p)", "aten.div.Tensor(x, p)", "f32[2, 3, 4]"},
    {"torch.true_divide(x, p)", "aten.div.Tensor(x, p)", "f32[2, 3, 4]"},
    {"torch.div(x, p, rounding_mode = 'floor')", "aten.div.Tensor_mode(x, p, rounding_mode = 'floor')", "f32[2, 3, 4]"},
    {"x.div(0.3, rounding_mode = 'trunc')", "aten.div.Tensor_mode(x, 0.3, rounding_mode = 'trunc')", "f32[2, 3, 4]"},
    {"x // 0.5", "aten.div.Tensor_mode(x, 0.5, rounding_mode = 'floor')", "f32[2, 3, 4]"},
    {"torch.floor_divide(x, p)", "aten.div.Tensor_mode(x, p, rounding_mode = 'floor')", "f32[2, 3, 4]"},
    {"x ** 2", "aten.pow.Tensor_Scalar(x, 2)", "f32[2, 3, 4]"},
    {"torch.pow(p, y)", "aten.pow.Tensor_Tensor(p, y)", "f32[2, 3, 4]"},
    {"x.pow(3)", "aten.pow.Tensor_Scalar(x, 3)", "f32[2, 3, 4]"},
    {"2.0 ** x", "aten.pow.Scalar(2.0, x)", "f32[2, 3, 4]"},
    {"-x", "aten.neg.default(x)", "f32[2, 3, 4]"},
    {"torch.neg(x)", "aten.neg.default(x)", "f32[2, 3, 4]"},
    {"x.neg()", "aten.neg.default(x)", "f32[2, 3, 4]"},
    {"torch.negative(x)", "aten.neg.default(x)", "f32[2, 3, 4]"},
    {"+x", "aten.clone.default(x)", "f32[2, 3, 4]"},
    {"torch.exp(x)", "aten.exp.default(x)", "f32[2, 3, 4]"},
    {"x.exp()", "aten.exp.default(x)", "f32[2, 3, 4]"},
    {"torch.log(p)", "aten.log.default(p)", "f32[2, 3, 4]"},
    {"p.log()", "aten.log.default(p)", "f32[2, 3, 4]"},
    {"torch.sqrt(p)", "aten.sqrt.default(p)", "f32[2, 3, 4]"},
    {"p.sqrt()", "aten.sqrt.default(p)", "f32[2, 3, 4]"},
    {"torch.rsqrt(p)", "aten.rsqrt.default(p)", "f32[2, 3, 4]"},
    {"p.rsqrt()", "aten.rsqrt.default(p)", "f32[2, 3, 4]"},
    {"torch.reciprocal(p)", "aten.reciprocal.default(p)", "f32[2, 3, 4]"},
    {"p.reciprocal()", "aten.reciprocal.default(p)", "f32[2, 3, 4]"},
    {"torch.sin(x)", "aten.sin.default(x)", "f32[2, 3, 4]"},
    {"x.sin()", "aten.sin.default(x)", "f32[2, 3, 4]"},
    {"torch.cos(x)", "aten.cos.default(x)", "f32[2, 3, 4]"},
    {"x.cos()", "aten.cos.default(x)", "f32[2, 3, 4]"},
    {"torch.abs(x)", "aten.abs.default(x)", "f32[2, 3, 4]"},
    {"x.abs()", "aten.abs.default(x)", "f32[2, 3, 4]"},
    {"torch.floor(x)", "aten.floor.default(x)", "f32[2, 3, 4]"},
    {"x.floor()", "aten.floor.default(x)", "f32[2, 3, 4]"},
    {"torch.ceil(x)", "aten.ceil.default(x)", "f32[2, 3, 4]"},
    {"x.ceil()", "aten.ceil.default(x)", "f32[2, 3, 4]"},
    {"torch.sign(x)", "aten.sign.default(x)", "f32[2, 3, 4]"},
    {"x.sign()", "aten.sign.default(x)", "f32[2, 3, 4]"},
    {"torch.log1p(p)", "aten.log1p.default(p)", "f32[2, 3, 4]"},
    {"p.log1p()", "aten.log1p.default(p)", "f32[2, 3, 4]"},
    {"torch.erf(x)", "aten.erf.default(x)", "f32[2, 3, 4]"},
    {"x.erf()", "aten.erf.default(x)", "f32[2, 3, 4]"},
    {"torch.special.erf(x)", "aten.erf.default(x)", "f32[2, 3, 4]"},
    {"torch.sigmoid(x)", "aten.sigmoid.default(x)", "f32[2, 3, 4]"},
    {"x.sigmoid()", "aten.sigmoid.default(x)", "f32[2, 3, 4]"},
    {"torch.nn.functional.sigmoid(x)", "aten.sigmoid.default(x)", "f32[2, 3, 4]"},
    {"torch.tanh(x)", "aten.tanh.default(x)", "f32[2, 3, 4]"},
    {"x.tanh()", "aten.tanh.default(x)", "f32[2, 3, 4]"},
    {"torch.nn.functional.tanh(x)", "aten.tanh.default(x)", "f32[2, 3, 4]"},
    {"torch.nn.functional.silu(x)", "aten.silu.default(x)", "f32[2, 3, 4]"},
    {"torch.relu(x)", "aten.relu.default(x)", "f32[2, 3, 4]"},
    {"x.relu()", "aten.relu.default(x)", "f32[2, 3, 4]"},
    {"torch.nn.functional.relu(x, inplace = False)", "aten.relu.default(x)", "f32[2, 3, 4]"},
    {"torch.nn.functional.gelu(x)", "aten.gelu.default(x)", "f32[2, 3, 4]"},
    {"torch.nn.functional.gelu(x, approximate = 'tanh')", "aten.gelu.default(x, approximate = 'tanh')", "f32[2, 3, 4]"},
    {"torch._C._nn.gelu(x)", "aten.gelu.default(x)", "f32[2, 3, 4]"},
    {"torch.clamp(x, min = -0.5, max = 0.5)", "aten.clamp.default(x, -0.5, 0.5)", "f32[2, 3, 4]"},
    {"x.clamp(-0.2)", "aten.clamp.default(x, -0.2)", "f32[2, 3, 4]"},
    {"torch.clip(x, max = 0.1)", "aten.clamp.default(x, None, 0.1)", "f32[2, 3, 4]"},
    {"x.clip(0.0, 0.3)", "aten.clamp.default(x, 0.0, 0.3)", "f32[2, 3, 4]"},
    {"torch.clamp_min(x, 0.1)", "aten.clamp_min.default(x, 0.1)", "f32[2, 3, 4]"},
    {"x.clamp_min(0.2)", "aten.clamp_min.default(x, 0.2)", "f32[2, 3, 4]"},
    {"torch.clamp_max(x, 0.1)", "aten.clamp_max.default(x, 0.1)", "f32[2, 3, 4]"},
    {"x.clamp_max(0.2)", "aten.clamp_max.default(x, 0.2)", "f32[2, 3, 4]"},
    {"torch.maximum(x, y)", "aten.maximum.default(x, y)", "f32[2, 3, 4]"},
    {"x.maximum(y)", "aten.maximum.default(x, y)", "f32[2, 3, 4]"},
    {"torch.max(x, y)", "aten.maximum.default(x, y)", "f32[2, 3, 4]"},
    {"torch.minimum(x, y)", "aten.minimum.default(x, y)", "f32[2, 3, 4]"},
    {"x.minimum(y)", "aten.minimum.default(x, y)", "f32[2, 3, 4]"},
    {"x.min(other = y)", "aten.minimum.default(x, y)", "f32[2, 3, 4]"},
    {"torch.triu(x)", "aten.triu.default(x)", "f32[2, 3, 4]"},
    {"x.triu(1)", "aten.triu.default(x, 1)", "f32[2, 3, 4]"},
    {"torch.tril(x, diagonal = -1)", "aten.tril.default(x, -1)", "f32[2, 3, 4]"},
    {"x.tril()", "aten.tril.default(x)", "f32[2, 3, 4]"},
    {"torch.where(m, x, y)", "aten.where.self(m, x, y)", "f32[2, 3, 4]"},
    {"torch.where(m, x, 0.0)", "aten.where.ScalarOther(m, x, 0.0)", "f32[2, 3, 4]"},
    {"torch.masked_fill(x, m, -1.0)", "aten.masked_fill.Scalar(x, m, -1.0)", "f32[2, 3, 4]"},
    {"x.masked_fill(m, -1000000000.0)", "aten.masked_fill.Scalar(x, m, -1000000000.0)", "f32[2, 3, 4]"},
    {"x < y", "aten.lt.Tensor(x, y)", "b8[2, 3, 4]"},
    {"torch.lt(x, 0.0)", "aten.lt.Scalar(x, 0.0)", "b8[2, 3, 4]"},
    {"x.lt(y)", "aten.lt.Tensor(x, y)", "b8[2, 3, 4]"},
    {"x <= y", "aten.le.Tensor(x, y)", "b8[2, 3, 4]"},
    {"torch.le(x, y)", "aten.le.Tensor(x, y)", "b8[2, 3, 4]"},
    {"x.le(0.1)", "aten.le.Scalar(x, 0.1)", "b8[2, 3, 4]"},
    {"x > 0", "aten.gt.Scalar(x, 0)", "b8[2, 3, 4]"},
    {"torch.gt(x, y)", "aten.gt.Tensor(x, y)", "b8[2, 3, 4]"},
    {"x.gt(y)", "aten.gt.Tensor(x, y)", "b8[2, 3, 4]"},
    {"x >= y", "aten.ge.Tensor(x, y)", "b8[2, 3, 4]"},
    {"torch.ge(x, y)", "aten.ge.Tensor(x, y)", "b8[2, 3, 4]"},
    {"x.ge(y)", "aten.ge.Tensor(x, y)", "b8[2, 3, 4]"},
    {"m == n", "aten.eq.Tensor(m, n)", "b8[2, 3, 4]"},
    {"torch.eq(m, n)", "aten.eq.Tensor(m, n)", "b8[2, 3, 4]"},
    {"m.eq(n)", "aten.eq.Tensor(m, n)", "b8[2, 3, 4]"},
    {"m != n", "aten.ne.Tensor(m, n)", "b8[2, 3, 4]"},
    {"torch.ne(x, y)", "aten.ne.Tensor(x, y)", "b8[2, 3, 4]"},
    {"m.ne(n)", "aten.ne.Tensor(m, n)", "b8[2, 3, 4]"},
    {"torch.logical_and(m, n)", "aten.logical_and.default(m, n)", "b8[2, 3, 4]"},
    {"m.logical_and(n)", "aten.logical_and.default(m, n)", "b8[2, 3, 4]"},
    {"torch.logical_or(m, n)", "aten.logical_or.default(m, n)", "b8[2, 3, 4]"},
    {"m.logical_or(n)", "aten.logical_or.default(m, n)", "b8[2, 3, 4]"},
    {"torch.logical_not(m)", "aten.logical_not.default(m)", "b8[2, 3, 4]"},
    {"m.logical_not()", "aten.logical_not.default(m)", "b8[2, 3, 4]"},
    {"torch.logical_xor(m, n)", "aten.logical_xor.default(m, n)", "b8[2, 3, 4]"},
    {"m.logical_xor(n)", "aten.logical_xor.default(m, n)", "b8[2, 3, 4]"},
    {"m & n", "aten.bitwise_and.Tensor(m, n)", "b8[2, 3, 4]"},
    {"torch.bitwise_and(m, n)", "aten.bitwise_and.Tensor(m, n)", "b8[2, 3, 4]"},
    {"m.bitwise_and(n)", "aten.bitwise_and.Tensor(m, n)", "b8[2, 3, 4]"},
    {"m | n", "aten.bitwise_or.Tensor(m, n)", "b8[2, 3, 4]"},
    {"torch.bitwise_or(m, n)", "aten.bitwise_or.Tensor(m, n)", "b8[2, 3, 4]"},
    {"m.bitwise_or(n)", "aten.bitwise_or.Tensor(m, n)", "b8[2, 3, 4]"},
    {"m ^ n", "aten.bitwise_xor.Tensor(m, n)", "b8[2, 3, 4]"},
    {"torch.bitwise_xor(m, n)", "aten.bitwise_xor.Tensor(m, n)", "b8[2, 3, 4]"},
    {"m.bitwise_xor(n)", "aten.bitwise_xor.Tensor(m, n)", "b8[2, 3, 4]"},
    {"~m", "aten.bitwise_not.default(m)", "b8[2, 3, 4]"},
    {"torch.bitwise_not(m)", "aten.bitwise_not.default(m)", "b8[2, 3, 4]"},
    {"m.bitwise_not()", "aten.bitwise_not.default(m)", "b8[2, 3, 4]"},
};

const std::vector<Row> kCopies = {
    {"x.contiguous()", "aten.clone.default(x)", "f32[2, 3, 4]"},
    {"torch.clone(x)", "aten.clone.default(x)", "f32[2, 3, 4]"},
    {"x.clone()", "aten.clone.default(x)", "f32[2, 3, 4]"},
    {"x.detach()", "aten.detach.default(x)", "f32[2, 3, 4]"},
    {"torch.detach(x)", "aten.detach.default(x)", "f32[2, 3, 4]"},
    {"x.float()", "aten._to_copy.default(x, dtype = torch.float32)", "f32[2, 3, 4]"},
    {"x.half()", "aten._to_copy.default(x, dtype = torch.float16)", "f16[2, 3, 4]"},
    {"x.bfloat16()", "aten._to_copy.default(x, dtype = torch.bfloat16)", "bf16[2, 3, 4]"},
    {"x.double()", "aten._to_copy.default(x, dtype = torch.float64)", "f64[2, 3, 4]"},
    {"g.long()", "aten._to_copy.default(g, dtype = torch.int64)", "i64[2, 3, 2]"},
    {"g.int()", "aten._to_copy.default(g, dtype = torch.int32)", "i32[2, 3, 2]"},
    {"g.bool()", "aten._to_copy.default(g, dtype = torch.bool)", "b8[2, 3, 2]"},
    {"m.float()", "aten._to_copy.default(m, dtype = torch.float32)", "f32[2, 3, 4]"},
    {"x.to(torch.float16)", "aten._to_copy.default(x, dtype = torch.float16)", "f16[2, 3, 4]"},
    {"x.to(dtype = torch.float64)", "aten._to_copy.default(x, dtype = torch.float64)", "f64[2, 3, 4]"},
    {"x.to(device(type='cpu'), torch.bfloat16)", "aten._to_copy.default(x, dtype = torch.bfloat16)", "bf16[2, 3, 4]"},
    {"m.type_as(x)", "aten._to_copy.default(m, dtype = torch.float32)", "f32[2, 3, 4]"},
    {"x.type(torch.float64)", "aten._to_copy.default(x, dtype = torch.float64)", "f64[2, 3, 4]"},
};

const std::vector<Row> kLayout = {
    {"x.view(6, 4)", "aten.view.default(x, [6, 4])", "f32[6, 4]"},
    {"x.view((6, 4))", "aten.view.default(x, [6, 4])", "f32[6, 4]"},
    {"x.view(-1, 4)", "aten.view.default(x, [-1, 4])", "f32[6, 4]"},
    {"x.reshape(2, 12)", "aten.reshape.default(x, [2, 12])", "f32[2, 12]"},
    {"torch.reshape(x, (4, 6))", "aten.reshape.default(x, [4, 6])", "f32[4, 6]"},
    {"x.reshape((-1,))", "aten.reshape.default(x, [-1])", "f32[24]"},
    {"x.permute(2, 0, 1)", "aten.permute.default(x, [2, 0, 1])", "f32[4, 2, 3]"},
    {"torch.permute(x, (1, 0, 2))", "aten.permute.default(x, [1, 0, 2])", "f32[3, 2, 4]"},
    {"x.permute((2, 1, 0))", "aten.permute.default(x, [2, 1, 0])", "f32[4, 3, 2]"},
    {"x.transpose(0, 2)", "aten.transpose.int(x, 0, 2)", "f32[4, 3, 2]"},
    {"torch.transpose(x, -1, -2)", "aten.transpose.int(x, -1, -2)", "f32[2, 4, 3]"},
    {"torch.swapaxes(x, 0, 1)", "aten.transpose.int(x, 0, 1)", "f32[3, 2, 4]"},
    {"x.swapaxes(1, 2)", "aten.transpose.int(x, 1, 2)", "f32[2, 4, 3]"},
    {"w.t()", "aten.t.default(w)", "f32[4, 3]"},
    {"torch.t(w)", "aten.t.default(w)", "f32[4, 3]"},
    {"w.expand(2, 3, 4)", "aten.expand.default(w, [2, 3, 4])", "f32[2, 3, 4]"},
    {"w.expand((2, -1, -1))", "aten.expand.default(w, [2, -1, -1])", "f32[2, 3, 4]"},
    {"w.expand_as(x)", "aten.expand.default(w, [2, 3, 4])", "f32[2, 3, 4]"},
    {"x.unsqueeze(1)", "aten.unsqueeze.default(x, 1)", "f32[2, 1, 3, 4]"},
    {"torch.unsqueeze(x, -1)", "aten.unsqueeze.default(x, -1)", "f32[2, 3, 4, 1]"},
    {"s.squeeze(1)", "aten.squeeze.dim(s, 1)", "f32[2, 4]"},
    {"torch.squeeze(s)", "aten.squeeze.default(s)", "f32[2, 4]"},
    {"s.squeeze(-2)", "aten.squeeze.dim(s, -2)", "f32[2, 4]"},
    {"x.flatten(1)", "aten.flatten.using_ints(x, 1)", "f32[2, 12]"},
    {"torch.flatten(x)", "aten.flatten.using_ints(x)", "f32[24]"},
    {"x.flatten(0, 1)", "aten.flatten.using_ints(x, 0, 1)", "f32[6, 4]"},
    {"x.unflatten(2, (2, 2))", "aten.unflatten.int(x, 2, [2, 2])", "f32[2, 3, 2, 2]"},
    {"torch.unflatten(x, -1, (4, 1))", "aten.unflatten.int(x, -1, [4, 1])", "f32[2, 3, 4, 1]"},
    {"torch.cat((x, y), 1)", "aten.cat.default([x, y], 1)", "f32[2, 6, 4]"},
    {"torch.cat([x, y], dim = -1)", "aten.cat.default([x, y], -1)", "f32[2, 3, 8]"},
    {"torch.concat([x, y])", "aten.cat.default([x, y])", "f32[4, 3, 4]"},
    {"torch.stack([x, y])", "aten.stack.default([x, y])", "f32[2, 2, 3, 4]"},
    {"torch.stack((x, y), dim = -1)", "aten.stack.default([x, y], -1)", "f32[2, 3, 4, 2]"},
    {"torch.narrow(x, 2, 1, 2)", "aten.narrow.default(x, 2, 1, 2)", "f32[2, 3, 2]"},
    {"x.narrow(-1, 0, 3)", "aten.narrow.default(x, -1, 0, 3)", "f32[2, 3, 3]"},
    {"torch.select(x, 1, 2)", "aten.select.int(x, 1, 2)", "f32[2, 4]"},
    {"x.select(-1, -1)", "aten.select.int(x, -1, -1)", "f32[2, 3]"},
    {"torch.index_select(x, 2, i)", "aten.index_select.default(x, 2, i)", "f32[2, 3, 2]"},
    {"x.index_select(0, i)", "aten.index_select.default(x, 0, i)", "f32[2, 3, 4]"},
    {"torch.gather(x, 2, g)", "aten.gather.default(x, 2, g)", "f32[2, 3, 2]"},
    {"x.gather(1, g)", "aten.gather.default(x, 1, g)", "f32[2, 3, 2]"},
    {"w.repeat(2, 1)", "aten.repeat.default(w, [2, 1])", "f32[6, 4]"},
    {"w.repeat((1, 2, 1))", "aten.repeat.default(w, [1, 2, 1])", "f32[1, 6, 4]"},
    {"torch.repeat_interleave(w, 2, dim = 0)", "aten.repeat_interleave.self_int(w, 2, 0)", "f32[6, 4]"},
    {"w.repeat_interleave(2, 1)", "aten.repeat_interleave.self_int(w, 2, 1)", "f32[3, 8]"},
    {"torch.index_add(w, 0, i, sa)", "aten.index_add.default(w, 0, i, sa)", "f32[3, 4]"},
    {"w.index_add(0, i, sa, alpha = 2)", "aten.index_add.default(w, 0, i, sa, alpha = 2)", "f32[3, 4]"},
    {"torch.nn.functional.pad(x, (1, 2))", "aten.constant_pad_nd.default(x, [1, 2])", "f32[2, 3, 7]"},
    {"torch._C._nn.pad(x, (0, 0, -1, 1), 'constant', 0.5)", "aten.constant_pad_nd.default(x, [0, 0, -1, 1], 0.5)",
     "f32[2, 3, 4]"},
    {"torch.nn.functional.one_hot(g, num_classes = 3)", "aten.one_hot.default(g, 3)", "i64[2, 3, 2, 3]"},
    {"torch._C._nn.one_hot(i, 2)", "aten.one_hot.default(i, 2)", "i64[2, 2]"},
    {"torch.nn.functional.embedding(i, w)", "aten.embedding.default(w, i)", "f32[2, 4]"},
    {"torch.nn.functional.embedding(g, w, None, None, 2.0, False, False)", "aten.embedding.default(w, g)",
     "f32[2, 3, 2, 4]"},
};

const std::vector<Row> kIndexing = {
    {"x[0]", "aten.select.int(x, 0, 0)", "f32[3, 4]"},
    {"operator.getitem(x, -1)", "aten.select.int(x, 0, -1)", "f32[3, 4]"},
    {"x[(slice(None, None, None), 1)]", "aten.select.int(x, 1, 1)", "f32[2, 4]"},
    {"x[(Ellipsis, slice(1, 3, None))]", "aten.slice.Tensor(x, 2, 1, 3)", "f32[2, 3, 2]"},
    {"x[(Ellipsis, slice(None, 1, None))]", "aten.slice.Tensor(x, 2, 0, 1)", "f32[2, 3, 1]"},
    {"x[(slice(None, None, None), slice(-2, None, None))]", "aten.slice.Tensor(x, 1, 1)", "f32[2, 2, 4]"},
    {"x[(Ellipsis, slice(None, None, 2))]", "aten.slice.Tensor(x, 2, 0, 9223372036854775807, 2)", "f32[2, 3, 2]"},
    {"x[(None, Ellipsis)]", "aten.unsqueeze.default(x, 0)", "f32[1, 2, 3, 4]"},
    {"x[(slice(None, None, None), None, 2)]", "\"f32[2, 1, 3, 4]\" = aten.unsqueeze.default(x, 1); aten.select.int($, 2, 2)",
     "f32[2, 1, 4]"},
    {"x[(1, Ellipsis, None, slice(1, None, None))]",
     "\"f32[3, 4]\" = aten.select.int(x, 0, 1); \"f32[3, 1, 4]\" = aten.unsqueeze.default($, 1); aten.slice.Tensor($, 2, 1)", "f32[3, 1, 3]"},
    {"x[(Ellipsis,)]", "aten.alias.default(x)", "f32[2, 3, 4]"},
    {"x[i]", "aten.index.Tensor(x, [i])", "f32[2, 3, 4]"},
    // Python's slice syntax, as FX's slice(a, b, c) form
    {"x[:, 1]", "aten.select.int(x, 1, 1)", "f32[2, 4]"},
    {"x[..., 1:3]", "aten.slice.Tensor(x, 2, 1, 3)", "f32[2, 3, 2]"},
    {"x[:, -2:]", "aten.slice.Tensor(x, 1, 1)", "f32[2, 2, 4]"},
    {"x[..., ::2]", "aten.slice.Tensor(x, 2, 0, 9223372036854775807, 2)", "f32[2, 3, 2]"},
    {"x[None, ...]", "aten.unsqueeze.default(x, 0)", "f32[1, 2, 3, 4]"},
    {"x[:, :, i]", "aten.index.Tensor(x, [None, None, i])", "f32[2, 3, 2]"},
    {"x[(slice(None, None, None), slice(None, None, None), i)]", "aten.index.Tensor(x, [None, None, i])",
     "f32[2, 3, 2]"},
};

const std::vector<Row> kReductions = {
    {"x.sum()", "aten.sum.default(x)", "f32[]"},
    {"torch.sum(x, -1)", "aten.sum.dim_IntList(x, [-1])", "f32[2, 3]"},
    {"x.sum(dim = (0, 2), keepdim = True)", "aten.sum.dim_IntList(x, [0, 2], True)", "f32[1, 3, 1]"},
    {"x.sum(1, dtype = torch.float64)", "aten.sum.dim_IntList(x, [1], dtype = torch.float64)", "f64[2, 4]"},
    {"x.sum(keepdim = True)", "aten.sum.dim_IntList(x, [], True)", "f32[1, 1, 1]"},
    {"x.mean()", "aten.mean.default(x)", "f32[]"},
    {"torch.mean(x, None, True)", "aten.mean.dim(x, [], True)", "f32[1, 1, 1]"},
    {"torch.mean(x, (1, 2))", "aten.mean.dim(x, [1, 2])", "f32[2]"},
    {"x.mean(-1, keepdim = True)", "aten.mean.dim(x, [-1], True)", "f32[2, 3, 1]"},
    {"torch.amax(x, -1)", "aten.amax.default(x, [-1])", "f32[2, 3]"},
    {"x.amax((0, 1), True)", "aten.amax.default(x, [0, 1], True)", "f32[1, 1, 4]"},
    {"torch.amin(x, 1)", "aten.amin.default(x, [1])", "f32[2, 4]"},
    {"x.amin(-1, keepdim = True)", "aten.amin.default(x, [-1], True)", "f32[2, 3, 1]"},
    {"torch.max(x)", "aten.max.default(x)", "f32[]"},
    {"x.max()", "aten.max.default(x)", "f32[]"},
    {"torch.min(x)", "aten.min.default(x)", "f32[]"},
    {"x.min()", "aten.min.default(x)", "f32[]"},
    {"torch.argmax(x, -1)", "aten.argmax.default(x, -1)", "i64[2, 3]"},
    {"x.argmax()", "aten.argmax.default(x)", "i64[]"},
    {"x.argmax(dim = 1, keepdim = True)", "aten.argmax.default(x, 1, True)", "i64[2, 1, 4]"},
    {"torch.cumsum(x, 1)", "aten.cumsum.default(x, 1)", "f32[2, 3, 4]"},
    {"x.cumsum(-1, dtype = torch.float64)", "aten.cumsum.default(x, -1, dtype = torch.float64)", "f64[2, 3, 4]"},
    {"m.cumsum(0)", "aten.cumsum.default(m, 0)", "i64[2, 3, 4]"},
    {"torch.softmax(x, -1)", "aten.softmax.int(x, -1)", "f32[2, 3, 4]"},
    {"x.softmax(dim = 1)", "aten.softmax.int(x, 1)", "f32[2, 3, 4]"},
        {"torch.nn.functional.softmax(x, dim = -1)", "aten.softmax.int(x, -1)", "f32[2, 3, 4]"},
    {"torch.nn.functional.softmax(x, -1, dtype = torch.float64)", "aten.softmax.int(x, -1, torch.float64)",
     "f64[2, 3, 4]"},
    {"torch.log_softmax(x, -1)", "aten.log_softmax.int(x, -1)", "f32[2, 3, 4]"},
    {"x.log_softmax(1)", "aten.log_softmax.int(x, 1)", "f32[2, 3, 4]"},
    {"torch.nn.functional.log_softmax(x, dim = 2)", "aten.log_softmax.int(x, 2)", "f32[2, 3, 4]"},
};

// Tuple results, read with getitem: `<row>` names the tuple, the row's value is
// its element given after '#' in the ATen column.
const std::vector<Row> kLinear = {
    {"torch.matmul(x, bb)", "aten.matmul.default(x, bb)", "f32[2, 3, 5]"},
    {"x @ k", "aten.matmul.default(x, k)", "f32[2, 3, 5]"},
    {"x.matmul(k)", "aten.matmul.default(x, k)", "f32[2, 3, 5]"},
    {"torch.mm(w, k)", "aten.mm.default(w, k)", "f32[3, 5]"},
    {"w.mm(k)", "aten.mm.default(w, k)", "f32[3, 5]"},
    {"torch.bmm(x, bb)", "aten.bmm.default(x, bb)", "f32[2, 3, 5]"},
    {"x.bmm(bb)", "aten.bmm.default(x, bb)", "f32[2, 3, 5]"},
    {"torch.baddbmm(c3, x, bb)", "aten.baddbmm.default(c3, x, bb)", "f32[2, 3, 5]"},
    {"torch.baddbmm(c3, x, bb, beta = 0.5, alpha = 2.0)", "aten.baddbmm.default(c3, x, bb, beta = 0.5, alpha = 2.0)",
     "f32[2, 3, 5]"},
    {"c3.baddbmm(x, bb)", "aten.baddbmm.default(c3, x, bb)", "f32[2, 3, 5]"},
    {"torch.addmm(c2, w, k)", "aten.addmm.default(c2, w, k)", "f32[3, 5]"},
    {"c2.addmm(w, k, alpha = 0.5)", "aten.addmm.default(c2, w, k, alpha = 0.5)", "f32[3, 5]"},
    {"torch._C._nn.linear(x, w2)", "aten.linear.default(x, w2)", "f32[2, 3, 5]"},
    {"torch.nn.functional.linear(x, w2, b5)", "aten.linear.default(x, w2, b5)", "f32[2, 3, 5]"},
    {"torch._C._nn.linear(x, w2, None)", "aten.linear.default(x, w2)", "f32[2, 3, 5]"},
    {"torch.nn.functional.layer_norm(x, (4,), g4, b4, 1e-05)", "aten.layer_norm.default(x, [4], g4, b4, 1e-05)",
     "f32[2, 3, 4]"},
    {"torch.nn.functional.layer_norm(x, (3, 4))", "aten.layer_norm.default(x, [3, 4])", "f32[2, 3, 4]"},
    {"torch.layer_norm(x, [4], g4, b4, 1e-06, True)", "aten.layer_norm.default(x, [4], g4, b4, 1e-06)",
     "f32[2, 3, 4]"},
    {"torch.nn.functional.rms_norm(x, (4,), g4, 1e-06)", "aten.rms_norm.default(x, [4], g4, 1e-06)", "f32[2, 3, 4]"},
    {"torch.rms_norm(x, [4])", "aten.rms_norm.default(x, [4])", "f32[2, 3, 4]"},
    {"torch.nn.functional.dropout(x, 0.1, False, False)", "aten.clone.default(x)", "f32[2, 3, 4]"},
    {"torch.nn.functional.dropout(x, p = 0.0, training = True)", "aten.clone.default(x)", "f32[2, 3, 4]"},
    {"torch.nn.functional.dropout(x, 0.5)", "aten.dropout.default(x, 0.5, True)", "f32[2, 3, 4]"},
    {"torch.dropout(x, 0.2, True)", "aten.dropout.default(x, 0.2, True)", "f32[2, 3, 4]"},
    {"torch._C._nn.scaled_dot_product_attention(q, kk, v)", "aten.scaled_dot_product_attention.default(q, kk, v)",
     "f32[2, 2, 3, 4]"},
    {"torch.nn.functional.scaled_dot_product_attention(q, kk, v, is_causal = True)",
     "aten.scaled_dot_product_attention.default(q, kk, v, None, 0.0, True)", "f32[2, 2, 3, 4]"},
    {"torch._C._nn.scaled_dot_product_attention(q, kk, v, attn_mask = am, dropout_p = 0.0, scale = 0.3)",
     "aten.scaled_dot_product_attention.default(q, kk, v, am, 0.0, False, scale = 0.3)", "f32[2, 2, 3, 4]"},
    {"torch._C._nn.scaled_dot_product_attention(q, kk, v, fm)", "aten.scaled_dot_product_attention.default(q, kk, v, fm)",
     "f32[2, 2, 3, 4]"},
    {"torch.nn.functional.cross_entropy(lg, tg)",
     "\"f32[4, 5]\" = aten._log_softmax.default(lg, 1, False); aten.nll_loss_forward.default($, tg, None, 1, -100); $[0]", "f32[]"},
    {"torch.nn.functional.cross_entropy(lg, tg, reduction = 'none')",
     "\"f32[4, 5]\" = aten._log_softmax.default(lg, 1, False); aten.nll_loss_forward.default($, tg, None, 0, -100); $[0]", "f32[4]"},
    {"torch.nn.functional.cross_entropy(lg, tg, wt, ignore_index = 1, reduction = 'sum')",
     "\"f32[4, 5]\" = aten._log_softmax.default(lg, 1, False); aten.nll_loss_forward.default($, tg, wt, 2, 1); $[0]", "f32[]"},
    {"torch.nn.functional.nll_loss(ls, tg)", "aten.nll_loss_forward.default(ls, tg, None, 1, -100); $[0]", "f32[]"},
    {"torch.einsum('bij,jk->bik', x, k)", "aten.matmul.default(x, k)", "f32[2, 3, 5]"},
    {"torch.functional.einsum('bij,bjk->bik', [x, bb])", "aten.bmm.default(x, bb)", "f32[2, 3, 5]"},
};

const std::vector<Row> kFactories = {
    {"torch.zeros(2, 3)", "aten.zeros.default([2, 3])", "f32[2, 3]"},
    {"torch.zeros((2, 3), dtype = torch.int64)", "aten.zeros.default([2, 3], dtype = torch.int64)", "i64[2, 3]"},
    {"torch.ones(3, device = device(type='cpu'))", "aten.ones.default([3])", "f32[3]"},
    {"torch.ones([2, 2], dtype = torch.bool)", "aten.ones.default([2, 2], dtype = torch.bool)", "b8[2, 2]"},
    {"torch.empty(2, 3)", "aten.empty.memory_format([2, 3])", "f32[2, 3]"},
    {"torch.full((2, 3), 1.5)", "aten.full.default([2, 3], 1.5)", "f32[2, 3]"},
    {"torch.full([2], 7, dtype = torch.int64)", "aten.full.default([2], 7, dtype = torch.int64)", "i64[2]"},
    {"torch.zeros_like(x)", "aten.zeros_like.default(x)", "f32[2, 3, 4]"},
    {"torch.ones_like(x, dtype = torch.float64)", "aten.ones_like.default(x, dtype = torch.float64)", "f64[2, 3, 4]"},
    {"torch.full_like(x, -2.0)", "aten.full_like.default(x, -2.0)", "f32[2, 3, 4]"},
    {"x.new_zeros(2, 3)", "aten.new_zeros.default(x, [2, 3])", "f32[2, 3]"},
    {"x.new_zeros((4,))", "aten.new_zeros.default(x, [4])", "f32[4]"},
    {"x.new_ones(2)", "aten.new_ones.default(x, [2])", "f32[2]"},
    {"x.new_full((2, 2), 3.0)", "aten.new_full.default(x, [2, 2], 3.0)", "f32[2, 2]"},
    {"torch.arange(5)", "aten.arange.default(5)", "i64[5]"},
    {"torch.arange(1, 7, 2)", "aten.arange.start_step(1, 7, 2)", "i64[3]"},
    {"torch.arange(0, 4, dtype = torch.float32)", "aten.arange.start(0, 4, dtype = torch.float32)", "f32[4]"},
    {"torch.arange(4, device = device(type='cuda', index=0))", "aten.arange.default(4)", "i64[4]"},
    {"torch.fill(x, 2.0)", "aten.fill.Scalar(x, 2.0)", "f32[2, 3, 4]"},
};

TEST(FxTorchLevel, ElementwiseMatchesAten) { expectSameResults(kElementwise, "elementwise"); }
TEST(FxTorchLevel, CopiesAndCastsMatchAten) { expectSameResults(kCopies, "copies"); }
TEST(FxTorchLevel, LayoutMatchesAten) { expectSameResults(kLayout, "layout"); }
TEST(FxTorchLevel, IndexingMatchesAten) { expectSameResults(kIndexing, "indexing"); }
TEST(FxTorchLevel, ReductionsMatchAten) { expectSameResults(kReductions, "reductions"); }
TEST(FxTorchLevel, LinearNormsAttentionLossesMatchAten) { expectSameResults(kLinear, "linear"); }
TEST(FxTorchLevel, FactoriesMatchAten) { expectSameResults(kFactories, "factories"); }

// Tuple results (chunk, split, unbind, topk, max/min with a dim), read by
// getitem lines as Dynamo prints them.
const char* kTupleTorch = R"FX(
        chunk = torch.chunk(x, 2, dim = -1)
        getitem: "f32[2, 3, 2]" = chunk[0]
        getitem_1: "f32[2, 3, 2]" = chunk[1];  chunk = None
        chunk_1 = x.chunk(3, 1)
        getitem_2: "f32[2, 1, 4]" = chunk_1[2]
        split = torch.functional.split(x, 1, dim = 1)
        getitem_3: "f32[2, 1, 4]" = split[1]
        split_1 = x.split([1, 3], -1)
        getitem_4: "f32[2, 3, 1]" = split_1[0]
        getitem_5: "f32[2, 3, 3]" = split_1[1]
        split_2 = torch.split(x, [2, 1], dim = 1)
        getitem_6: "f32[2, 1, 4]" = split_2[1]
        unbind = x.unbind(1)
        getitem_7: "f32[2, 4]" = unbind[2]
        unbind_1 = torch.unbind(x)
        getitem_8: "f32[3, 4]" = unbind_1[1]
        topk = torch.topk(x, 2)
        getitem_9: "f32[2, 3, 2]" = topk[0]
        getitem_10: "i64[2, 3, 2]" = topk[1]
        topk_1 = x.topk(1, dim = 1, largest = False)
        getitem_11: "f32[2, 1, 4]" = topk_1[0]
        max_1 = x.max(-1)
        getitem_12: "f32[2, 3]" = max_1[0]
        getitem_13: "i64[2, 3]" = max_1[1]
        max_2 = torch.max(x, dim = 1, keepdim = True)
        getitem_14: "f32[2, 1, 4]" = max_2[0]
        min_1 = torch.min(x, 0)
        getitem_15: "f32[3, 4]" = min_1[0]
        getitem_16: "i64[3, 4]" = operator.getitem(min_1, 1)
        min_2 = x.min(dim = 2)
        getitem_17: "f32[2, 3]" = min_2[0]
        split_3 = x.split(split_size = 2, dim = 2)
        getitem_18: "f32[2, 3, 2]" = split_3[0]
)FX";

const char* kTupleAten = R"FX(
        chunk = torch.ops.aten.chunk.default(x, 2, -1)
        getitem: "f32[2, 3, 2]" = chunk[0]
        getitem_1: "f32[2, 3, 2]" = chunk[1];  chunk = None
        chunk_1 = torch.ops.aten.chunk.default(x, 3, 1)
        getitem_2: "f32[2, 1, 4]" = chunk_1[2]
        split = torch.ops.aten.split.Tensor(x, 1, 1)
        getitem_3: "f32[2, 1, 4]" = split[1]
        split_1 = torch.ops.aten.split_with_sizes.default(x, [1, 3], -1)
        getitem_4: "f32[2, 3, 1]" = split_1[0]
        getitem_5: "f32[2, 3, 3]" = split_1[1]
        split_2 = torch.ops.aten.split_with_sizes.default(x, [2, 1], 1)
        getitem_6: "f32[2, 1, 4]" = split_2[1]
        unbind = torch.ops.aten.unbind.int(x, 1)
        getitem_7: "f32[2, 4]" = unbind[2]
        unbind_1 = torch.ops.aten.unbind.int(x)
        getitem_8: "f32[3, 4]" = unbind_1[1]
        topk = torch.ops.aten.topk.default(x, 2)
        getitem_9: "f32[2, 3, 2]" = topk[0]
        getitem_10: "i64[2, 3, 2]" = topk[1]
        topk_1 = torch.ops.aten.topk.default(x, 1, 1, False)
        getitem_11: "f32[2, 1, 4]" = topk_1[0]
        max_1 = torch.ops.aten.max.dim(x, -1)
        getitem_12: "f32[2, 3]" = max_1[0]
        getitem_13: "i64[2, 3]" = max_1[1]
        max_2 = torch.ops.aten.max.dim(x, 1, True)
        getitem_14: "f32[2, 1, 4]" = max_2[0]
        min_1 = torch.ops.aten.min.dim(x, 0)
        getitem_15: "f32[3, 4]" = min_1[0]
        getitem_16: "i64[3, 4]" = operator.getitem(min_1, 1)
        min_2 = torch.ops.aten.min.dim(x, 2)
        getitem_17: "f32[2, 3]" = min_2[0]
        split_3 = torch.ops.aten.split.Tensor(x, 2, 2)
        getitem_18: "f32[2, 3, 2]" = split_3[0]
)FX";

TEST(FxTorchLevel, TupleResultsMatchAten) {
  std::string ret = "        return (";
  for (int k = 0; k <= 18; ++k) ret += std::string(k ? "getitem_" + std::to_string(k) : "getitem") + ", ";
  ret += ")\n";
  auto tg = importFxText(header() + kTupleTorch + ret, "tuples.torch.py");
  ASSERT_TRUE(tg.ok()) << tg.error().str();
  auto ag = importFxText(header() + kTupleAten + ret, "tuples.aten.py");
  ASSERT_TRUE(ag.ok()) << ag.error().str();
  ir::TensorMap in;
  uint32_t seed = 1;
  for (const auto& [n, t] : kInputs) in["L_" + std::string(n) + "_"] = input(n, t, seed++);
  auto to = ir::runGraph(*tg, in);
  auto ao = ir::runGraph(*ag, in);
  ASSERT_TRUE(to.ok() && ao.ok());
  ASSERT_EQ(to->size(), 19u);
  for (const auto& [name, t] : *ao) {
    ASSERT_TRUE(to->count(name)) << name;
    EXPECT_EQ(to->at(name).type(), t.type()) << name;
    EXPECT_EQ(values(to->at(name)), values(t)) << name;
  }
}

// The example of the issue: Dynamo's print of a small MLP, linear through
// getitem with Ellipsis, as torch 2.x prints it.
TEST(FxTorchLevel, DynamoMlpExampleImports) {
  const char* text = R"FX(
class GraphModule(torch.nn.Module):
    def forward(self, L_x_: "f32[4, 8]", L_self_modules_fc1_parameters_weight_: "f32[16, 8]", L_self_modules_fc1_parameters_bias_: "f32[16]", L_self_modules_fc2_parameters_weight_: "f32[8, 16]"):
        l_x_ = L_x_
        l_self_modules_fc1_parameters_weight_ = L_self_modules_fc1_parameters_weight_
        l_self_modules_fc1_parameters_bias_ = L_self_modules_fc1_parameters_bias_
        l_self_modules_fc2_parameters_weight_ = L_self_modules_fc2_parameters_weight_
        
         # File: /tmp/m.py:10 in forward, code: h = self.fc1(x)
        linear: "f32[4, 16]" = torch._C._nn.linear(l_x_, l_self_modules_fc1_parameters_weight_, l_self_modules_fc1_parameters_bias_);  l_x_ = l_self_modules_fc1_parameters_weight_ = l_self_modules_fc1_parameters_bias_ = None
        
         # File: /tmp/m.py:11 in forward, code: h = torch.nn.functional.gelu(h)
        gelu: "f32[4, 16]" = torch.nn.functional.gelu(linear);  linear = None
        mul: "f32[4, 16]" = gelu * 0.5;  gelu = None
        linear_1: "f32[4, 8]" = torch._C._nn.linear(mul, l_self_modules_fc2_parameters_weight_, None);  mul = l_self_modules_fc2_parameters_weight_ = None
        view: "f32[4, 2, 4]" = linear_1.view(4, 2, 4);  linear_1 = None
        transpose: "f32[4, 4, 2]" = view.transpose(1, 2);  view = None
        getitem: "f32[4, 4, 1]" = transpose[(Ellipsis, slice(None, 1, None))]
        return (transpose, getitem)
)FX";
  auto g = importFxText(text, "mlp.py");
  ASSERT_TRUE(g.ok()) << g.error().str();
  ASSERT_EQ(g->outputs().size(), 2u);
  EXPECT_EQ(g->value(g->outputs()[1]).type.str(), "f32[4, 4, 1]");
  // nodes carry the `# File:` source line of their capture line
  bool sawGelu = false;
  for (const auto& n : g->nodes())
    if (n.op == ir::OpKind::Gelu) {
      sawGelu = true;
      EXPECT_EQ(n.loc.file, "/tmp/m.py");
      EXPECT_EQ(n.loc.line, 11);
    }
  EXPECT_TRUE(sawGelu);
}

// Every callable of the table has a row above (its spelling: `torch.f(`,
// `<value>.m(`, or the operator), so a new entry without a numeric test fails.
}  // namespace
// The rows of the in-place forms (fx_torch_inplace_test.cpp).
std::string inPlaceRowsText();
namespace {

TEST(FxTorchLevel, EveryCallableHasANumericRow) {
  std::string all = std::string(kTupleTorch) + inPlaceRowsText();
  for (const auto* rows : {&kElementwise, &kCopies, &kLayout, &kIndexing, &kReductions, &kLinear, &kFactories})
    for (const auto& r : *rows) all += std::string(" = ") + r.torch + "\n";
  const std::map<std::string, std::string> kOperators = {
      {"add", " + "}, {"sub", " - "}, {"mul", " * "}, {"truediv", " / "}, {"floordiv", " // "}, {"pow", " ** "},
      {"matmul", " @ "}, {"neg", "= -"}, {"pos", "= +"}, {"lt", " < "}, {"le", " <= "}, {"gt", " > "},
      {"ge", " >= "}, {"eq", " == "}, {"ne", " != "}, {"getitem", "x["}, {"setitem", "] = "}, {"and_", " & "}, {"or_", " | "},
      {"xor", " ^ "}, {"invert", "= ~"}};
  for (const auto& entry : fx::torchLevelEntries())
    for (const auto& name : entry.names) {
      // errors only (data-dependent sizes), tested in fx_torch_inplace_test.cpp
      if (entry.aten == std::vector<std::string>{"@data_dependent"}) continue;
      if (name.rfind("operator.", 0) == 0) {
        auto it = kOperators.find(name.substr(9));
        ASSERT_NE(it, kOperators.end()) << name;
        EXPECT_NE(all.find(it->second), std::string::npos) << name << ": no row uses " << it->second;
        continue;
      }
      if (name.rfind("Tensor.", 0) == 0) {
        std::regex method("(^|[ (,=])(?!torch\\b)[a-z][a-z0-9_]*\\." + name.substr(7) + "\\(");
        EXPECT_TRUE(std::regex_search(all, method)) << name << ": no row calls it as a method";
        continue;
      }
      EXPECT_NE(all.find(name + "("), std::string::npos) << name << ": no row calls it";
    }
}

// Every ATen op a translation can produce is in the ATen table.
TEST(FxTorchLevel, TargetsAreMappedAtenOps) {
  auto mapped = fx::mappedOpNames();
  for (const auto& entry : fx::torchLevelEntries())
    for (const auto& op : entry.aten) {
      if (op[0] == '@') continue;
      EXPECT_NE(std::find(mapped.begin(), mapped.end(), op), mapped.end()) << entry.names[0] << " -> " << op;
    }
}

// docs/fx-import.md lists the table (between the markers below), generated
// from it: `SP_UPDATE_DOCS=1 build/frontend/frontend_tests
// --gtest_filter=FxTorchLevel.DocsListTheTable` rewrites the list.
TEST(FxTorchLevel, DocsListTheTable) {
  const std::map<std::string, std::string> kHooks = {
      {"@index", "one view per index item: select.int (int), slice.Tensor (slice), unsqueeze.default (None), "
                 "index.Tensor (integer tensor), slice.Tensor per entry then cat.default (list of ints); Ellipsis spans "
                 "the rest"},
      {"@cross_entropy", "_log_softmax.default over the classes, then nll_loss_forward.default (result 0)"},
      {"@nll_loss", "nll_loss_forward.default (result 0)"},
      {"@setitem", "in place on input (x[index] = value): the basic items as views, then index_put.default (a "
                   "boolean mask or 1-d integer tensor), slice_scatter.default per entry (list of ints) or "
                   "copy.default / fill.Scalar (none) into the view, written back by slice_scatter.default (int, "
                   "slice) and squeeze.dim (None)"},
      {"@data_dependent", "none: fx-data-dependent, the result's size depends on tensor values (a partial import leaves it out with what depends on it, Data-dependent sizes)"}};
  std::string table = "| callables | ATen |\n|---|---|\n";
  for (const auto& entry : fx::torchLevelEntries()) {
    std::string names, ops;
    for (const auto& n : entry.names) names += (names.empty() ? "`" : ", `") + n + "`";
    for (const auto& op : entry.aten) ops += (ops.empty() ? "" : ", ") + (kHooks.count(op) ? kHooks.at(op) : op);
    table += "| " + names + " | " + ops + " |\n";
  }
  const std::string begin = "<!-- torch-level table: generated from frontend/fx_torch_ops.cpp -->\n";
  const std::string end = "<!-- end of the torch-level table -->";
  const std::string path = SP_SOURCE_DIR "/docs/fx-import.md";
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string doc = ss.str();
  size_t a = doc.find(begin), b = doc.find(end);
  ASSERT_TRUE(a != std::string::npos && b != std::string::npos && a < b) << "markers missing in " << path;
  a += begin.size();
  if (std::getenv("SP_UPDATE_DOCS")) {
    doc.replace(a, b - a, table);
    std::ofstream(path, std::ios::trunc) << doc;
    return;
  }
  EXPECT_EQ(doc.substr(a, b - a), table) << "refresh with SP_UPDATE_DOCS=1";
}

// A Hugging Face Llama prologue as Dynamo prints it: RMSNorm in f32 (`to`,
// `pow`, `mean(keepdim)`, `rsqrt`), the rotary embedding under a disabled
// autocast region (`inv_freq[None, :, None]`, `position_ids[:, None, :]`,
// `@`, `cat`, `cos`/`sin`), and rotate_half by subscripts; checked against
// the formulas.
TEST(FxTorchLevel, LlamaNormAndRotaryMatchTheFormulas) {
  auto g = importFxText(R"FX(
class GraphModule(torch.nn.Module):
    def forward(self, L_hidden_states_: "f32[1, 4, 8]", L_self_modules_norm_parameters_weight_: "f32[8]", L_self_modules_rotary_emb_buffers_inv_freq_: "f32[2]", L_position_ids_: "i64[1, 4]"):
        l_hidden_states_ = L_hidden_states_
        l_self_modules_norm_parameters_weight_ = L_self_modules_norm_parameters_weight_
        l_self_modules_rotary_emb_buffers_inv_freq_ = L_self_modules_rotary_emb_buffers_inv_freq_
        l_position_ids_ = L_position_ids_
        
         # File: /transformers/models/llama/modeling_llama.py:65 in forward, code: hidden_states = hidden_states.to(torch.float32)
        hidden_states: "f32[1, 4, 8]" = l_hidden_states_.to(torch.float32);  l_hidden_states_ = None
        
         # File: /transformers/models/llama/modeling_llama.py:66 in forward, code: variance = hidden_states.pow(2).mean(-1, keepdim=True)
        pow_1: "f32[1, 4, 8]" = hidden_states.pow(2)
        variance: "f32[1, 4, 1]" = pow_1.mean(-1, keepdim = True);  pow_1 = None
        
         # File: /transformers/models/llama/modeling_llama.py:67 in forward, code: hidden_states = hidden_states * torch.rsqrt(variance + self.variance_epsilon)
        add: "f32[1, 4, 1]" = variance + 1e-06;  variance = None
        rsqrt: "f32[1, 4, 1]" = torch.rsqrt(add);  add = None
        hidden_states_1: "f32[1, 4, 8]" = hidden_states * rsqrt;  hidden_states = rsqrt = None
        
         # File: /transformers/models/llama/modeling_llama.py:68 in forward, code: return self.weight * hidden_states.to(input_dtype)
        to_1: "f32[1, 4, 8]" = hidden_states_1.to(torch.float32);  hidden_states_1 = None
        hidden_states_2: "f32[1, 4, 8]" = l_self_modules_norm_parameters_weight_ * to_1;  l_self_modules_norm_parameters_weight_ = to_1 = None
        
         # File: /transformers/models/llama/modeling_llama.py:102 in forward, code: inv_freq_expanded = self.inv_freq[None, :, None].float().expand(position_ids.shape[0], -1, 1).to(x.device)
        getitem: "f32[1, 2, 1]" = l_self_modules_rotary_emb_buffers_inv_freq_[(None, slice(None, None, None), None)];  l_self_modules_rotary_emb_buffers_inv_freq_ = None
        float_1: "f32[1, 2, 1]" = getitem.float();  getitem = None
        expand: "f32[1, 2, 1]" = float_1.expand(1, -1, 1);  float_1 = None
        inv_freq_expanded: "f32[1, 2, 1]" = expand.to(device(type='cpu'));  expand = None
        
         # File: /transformers/models/llama/modeling_llama.py:103 in forward, code: position_ids_expanded = position_ids[:, None, :].float()
        getitem_1: "i64[1, 1, 4]" = l_position_ids_[(slice(None, None, None), None, slice(None, None, None))];  l_position_ids_ = None
        position_ids_expanded: "f32[1, 1, 4]" = getitem_1.float();  getitem_1 = None
        
         # File: /transformers/models/llama/modeling_llama.py:106 in forward, code: with torch.autocast(device_type=device_type, enabled=False):  # Force float32
        _enter_autocast = torch.amp.autocast_mode._enter_autocast('cpu', None, False, None)
        
         # File: /transformers/models/llama/modeling_llama.py:107 in forward, code: freqs = (inv_freq_expanded.float() @ position_ids_expanded.float()).transpose(1, 2)
        float_3: "f32[1, 2, 1]" = inv_freq_expanded.float();  inv_freq_expanded = None
        float_4: "f32[1, 1, 4]" = position_ids_expanded.float();  position_ids_expanded = None
        matmul: "f32[1, 2, 4]" = float_3 @ float_4;  float_3 = float_4 = None
        freqs: "f32[1, 4, 2]" = matmul.transpose(1, 2);  matmul = None
        
         # File: /transformers/models/llama/modeling_llama.py:108 in forward, code: emb = torch.cat((freqs, freqs), dim=-1)
        emb: "f32[1, 4, 4]" = torch.cat((freqs, freqs), dim = -1);  freqs = None
        cos: "f32[1, 4, 4]" = emb.cos()
        cos_1: "f32[1, 4, 4]" = cos * 1.0;  cos = None
        sin: "f32[1, 4, 4]" = emb.sin();  emb = None
        sin_1: "f32[1, 4, 4]" = sin * 1.0;  sin = None
        
         # File: /transformers/models/llama/modeling_llama.py:106 in forward, code: with torch.autocast(device_type=device_type, enabled=False):  # Force float32
        _exit_autocast = torch.amp.autocast_mode._exit_autocast(_enter_autocast);  _enter_autocast = _exit_autocast = None
        cos_2: "f32[1, 4, 4]" = cos_1.to(dtype = torch.float32);  cos_1 = None
        sin_2: "f32[1, 4, 4]" = sin_1.to(dtype = torch.float32);  sin_1 = None
        
         # File: /transformers/models/llama/modeling_llama.py:200 in forward, code: query_states = self.q_proj(hidden_states).view(hidden_shape).transpose(1, 2)
        view: "f32[1, 4, 2, 4]" = hidden_states_2.view((1, 4, -1, 4))
        query_states: "f32[1, 2, 4, 4]" = view.transpose(1, 2);  view = None
        
         # File: /transformers/models/llama/modeling_llama.py:140 in apply_rotary_pos_emb, code: cos = cos.unsqueeze(unsqueeze_dim)
        cos_3: "f32[1, 1, 4, 4]" = cos_2.unsqueeze(1);  cos_2 = None
        sin_3: "f32[1, 1, 4, 4]" = sin_2.unsqueeze(1);  sin_2 = None
        
         # File: /transformers/models/llama/modeling_llama.py:142 in apply_rotary_pos_emb, code: q_embed = (q * cos) + (rotate_half(q) * sin)
        mul_2: "f32[1, 2, 4, 4]" = query_states * cos_3;  cos_3 = None
        x1: "f32[1, 2, 4, 2]" = query_states[(Ellipsis, slice(None, 2, None))]
        x2: "f32[1, 2, 4, 2]" = query_states[(Ellipsis, slice(2, None, None))];  query_states = None
        neg: "f32[1, 2, 4, 2]" = -x2;  x2 = None
        cat_1: "f32[1, 2, 4, 4]" = torch.cat((neg, x1), dim = -1);  neg = x1 = None
        mul_3: "f32[1, 2, 4, 4]" = cat_1 * sin_3;  cat_1 = sin_3 = None
        q_embed: "f32[1, 2, 4, 4]" = mul_2 + mul_3;  mul_2 = mul_3 = None
        return (hidden_states_2, q_embed)
)FX",
                        "llama.py");
  ASSERT_TRUE(g.ok()) << g.error().str();
  auto x = noise(32, 7), w = noise(8, 8);
  std::vector<double> invFreq = {1.0, 0.1}, pos = {0, 1, 2, 3};
  auto out = ir::runGraph(*g, {{"L_hidden_states_", typed(DType::F32, {1, 4, 8}, x)},
                               {"L_self_modules_norm_parameters_weight_", typed(DType::F32, {8}, w)},
                               {"L_self_modules_rotary_emb_buffers_inv_freq_", typed(DType::F32, {2}, invFreq)},
                               {"L_position_ids_", typed(DType::I64, {1, 4}, pos)}});
  ASSERT_TRUE(out.ok()) << out.error().str();
  std::vector<double> norm(32), rot(32);
  for (int t = 0; t < 4; ++t) {
    double ms = 0;
    for (int d = 0; d < 8; ++d) ms += x[size_t(t * 8 + d)] * x[size_t(t * 8 + d)] / 8;
    for (int d = 0; d < 8; ++d) norm[size_t(t * 8 + d)] = w[size_t(d)] * x[size_t(t * 8 + d)] / std::sqrt(ms + 1e-6);
  }
  // q [1, heads 2, t 4, d 4] = norm viewed [t, h, d] and transposed
  for (int h = 0; h < 2; ++h)
    for (int t = 0; t < 4; ++t)
      for (int d = 0; d < 4; ++d) {
        auto q = [&](int dd) { return norm[size_t(t * 8 + h * 4 + dd)]; };
        double angle = invFreq[size_t(d % 2)] * pos[size_t(t)];
        double half = d < 2 ? -q(d + 2) : q(d - 2);
        rot[size_t((h * 4 + t) * 4 + d)] = q(d) * std::cos(angle) + half * std::sin(angle);
      }
  fx_test::expectNear(values(out->at("hidden_states_2")), norm, 1e-5, "rms_norm");
  fx_test::expectNear(values(out->at("q_embed")), rot, 1e-5, "rotary");
}

// Size queries (`size = x.size()`, `x.size(-1)`, `size[0]`, `x.dim()`)
// are SymInts: known integers where the dims are concrete, usable as sizes.
TEST(FxTorchLevel, SizeQueriesAreKnownIntegers) {
  auto g = importFxText(R"FX(
class GraphModule(torch.nn.Module):
    def forward(self, L_x_: "f32[2, 3, 4]"):
        l_x_ = L_x_
        size = l_x_.size()
        getitem = size[0]
        getitem_1 = size[-2];  size = None
        size_1 = l_x_.size(-1)
        dim = l_x_.dim()
        view: "f32[6, 4]" = l_x_.view(getitem_1 * getitem, size_1)
        view_1: "f32[2, 12]" = l_x_.reshape(getitem, -1)
        return (view, view_1)
)FX",
                        "sizes.py");
  ASSERT_TRUE(g.ok()) << g.error().str();
  EXPECT_EQ(g->value(g->outputs()[0]).type.str(), "f32[6, 4]");
}

// Hugging Face GPT-2 as Dynamo prints it (eager attention, NewGELU, Conv1D):
// each is checked against the graph's own equivalent written with the fused
// callables (causal scaled_dot_product_attention, F.gelu tanh, F.linear).
TEST(FxTorchLevel, Gpt2EagerFormsMatchTheFusedOnes) {
  auto g = importFxText(R"FX(
class GraphModule(torch.nn.Module):
    def forward(self, L_q_: "f32[1, 2, 4, 4]", L_k_: "f32[1, 2, 4, 4]", L_v_: "f32[1, 2, 4, 4]", L_self_modules_attn_buffers_bias_: "b8[1, 1, 8, 8]", L_x_: "f32[2, 4, 4]", L_self_modules_c_attn_parameters_weight_: "f32[4, 6]", L_self_modules_c_attn_parameters_bias_: "f32[6]"):
        l_q_ = L_q_
        l_k_ = L_k_
        l_v_ = L_v_
        l_self_modules_attn_buffers_bias_ = L_self_modules_attn_buffers_bias_
        l_x_ = L_x_
        l_self_modules_c_attn_parameters_weight_ = L_self_modules_c_attn_parameters_weight_
        l_self_modules_c_attn_parameters_bias_ = L_self_modules_c_attn_parameters_bias_
        
         # File: /transformers/models/gpt2/modeling_gpt2.py:190 in _attn, code: attn_weights = torch.matmul(query, key.transpose(-1, -2))
        transpose: "f32[1, 2, 4, 4]" = l_k_.transpose(-1, -2)
        attn_weights: "f32[1, 2, 4, 4]" = torch.matmul(l_q_, transpose);  transpose = None
        
         # File: /transformers/models/gpt2/modeling_gpt2.py:193 in _attn, code: attn_weights = attn_weights / torch.full([], value.size(-1) ** 0.5, dtype=attn_weights.dtype, device=attn_weights.device)
        full: "f32[]" = torch.full([], 2.0, dtype = torch.float32, device = device(type='cpu'))
        attn_weights_1: "f32[1, 2, 4, 4]" = attn_weights / full;  attn_weights = full = None
        
         # File: /transformers/models/gpt2/modeling_gpt2.py:203 in _attn, code: causal_mask = self.bias[:, :, key_length - query_length : key_length, :key_length]
        causal_mask: "b8[1, 1, 4, 4]" = l_self_modules_attn_buffers_bias_[(slice(None, None, None), slice(None, None, None), slice(0, 4, None), slice(None, 4, None))];  l_self_modules_attn_buffers_bias_ = None
        
         # File: /transformers/models/gpt2/modeling_gpt2.py:207 in _attn, code: mask_value = torch.full([], mask_value, dtype=attn_weights.dtype, device=attn_weights.device)
        full_1: "f32[]" = torch.full([], -3.4028234663852886e+38, dtype = torch.float32, device = device(type='cpu'))
        
         # File: /transformers/models/gpt2/modeling_gpt2.py:208 in _attn, code: attn_weights = torch.where(causal_mask, attn_weights.to(attn_weights.dtype), mask_value)
        to: "f32[1, 2, 4, 4]" = attn_weights_1.to(torch.float32);  attn_weights_1 = None
        attn_weights_2: "f32[1, 2, 4, 4]" = torch.where(causal_mask, to, full_1);  causal_mask = to = full_1 = None
        
         # File: /transformers/models/gpt2/modeling_gpt2.py:214 in _attn, code: attn_weights = nn.functional.softmax(attn_weights, dim=-1)
        attn_weights_3: "f32[1, 2, 4, 4]" = torch.nn.functional.softmax(attn_weights_2, dim = -1);  attn_weights_2 = None
        
         # File: /transformers/models/gpt2/modeling_gpt2.py:217 in _attn, code: attn_weights = attn_weights.type(value.dtype)
        attn_weights_4: "f32[1, 2, 4, 4]" = attn_weights_3.type(torch.float32);  attn_weights_3 = None
        
         # File: /transformers/models/gpt2/modeling_gpt2.py:225 in _attn, code: attn_output = torch.matmul(attn_weights, value)
        attn_output: "f32[1, 2, 4, 4]" = torch.matmul(attn_weights_4, l_v_);  attn_weights_4 = None
        sdpa: "f32[1, 2, 4, 4]" = torch._C._nn.scaled_dot_product_attention(l_q_, l_k_, l_v_, attn_mask = None, dropout_p = 0.0, is_causal = True)
        
         # File: /transformers/activations.py:56 in forward, code: return 0.5 * input * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (input + 0.044715 * torch.pow(input, 3.0))))
        mul: "f32[1, 2, 4, 4]" = 0.5 * l_q_
        pow_1: "f32[1, 2, 4, 4]" = torch.pow(l_q_, 3.0)
        mul_1: "f32[1, 2, 4, 4]" = 0.044715 * pow_1;  pow_1 = None
        add: "f32[1, 2, 4, 4]" = l_q_ + mul_1;  mul_1 = None
        mul_2: "f32[1, 2, 4, 4]" = 0.7978845608028654 * add;  add = None
        tanh: "f32[1, 2, 4, 4]" = torch.tanh(mul_2);  mul_2 = None
        add_1: "f32[1, 2, 4, 4]" = 1.0 + tanh;  tanh = None
        mul_3: "f32[1, 2, 4, 4]" = mul * add_1;  mul = add_1 = None
        gelu: "f32[1, 2, 4, 4]" = torch.nn.functional.gelu(l_q_, approximate = 'tanh')
        
         # File: /transformers/pytorch_utils.py:105 in forward, code: x = torch.addmm(self.bias, x.view(-1, x.size(-1)), self.weight)
        view: "f32[8, 4]" = l_x_.view(-1, 4)
        addmm: "f32[8, 6]" = torch.addmm(l_self_modules_c_attn_parameters_bias_, view, l_self_modules_c_attn_parameters_weight_);  view = None
        
         # File: /transformers/pytorch_utils.py:106 in forward, code: x = x.view(size_out)
        view_1: "f32[2, 4, 6]" = addmm.view((2, 4, 6));  addmm = None
        t: "f32[6, 4]" = l_self_modules_c_attn_parameters_weight_.t()
        linear: "f32[2, 4, 6]" = torch._C._nn.linear(l_x_, t, l_self_modules_c_attn_parameters_bias_)
        return (attn_output, sdpa, mul_3, gelu, view_1, linear)
)FX",
                        "gpt2.py");
  ASSERT_TRUE(g.ok()) << g.error().str();
  std::vector<double> tril(64);
  for (int r = 0; r < 8; ++r)
    for (int c = 0; c <= r; ++c) tril[size_t(r * 8 + c)] = 1;
  auto out = ir::runGraph(*g, {{"L_q_", typed(DType::F32, {1, 2, 4, 4}, noise(32, 1))},
                               {"L_k_", typed(DType::F32, {1, 2, 4, 4}, noise(32, 2))},
                               {"L_v_", typed(DType::F32, {1, 2, 4, 4}, noise(32, 3))},
                               {"L_self_modules_attn_buffers_bias_", typed(DType::Bool, {1, 1, 8, 8}, tril)},
                               {"L_x_", typed(DType::F32, {2, 4, 4}, noise(32, 4))},
                               {"L_self_modules_c_attn_parameters_weight_", typed(DType::F32, {4, 6}, noise(24, 5))},
                               {"L_self_modules_c_attn_parameters_bias_", typed(DType::F32, {6}, noise(6, 6))}});
  ASSERT_TRUE(out.ok()) << out.error().str();
  fx_test::expectNear(values(out->at("attn_output")), values(out->at("sdpa")), 1e-5, "eager vs sdpa");
  fx_test::expectNear(values(out->at("mul_3")), values(out->at("gelu")), 1e-5, "NewGELU vs gelu tanh");
  fx_test::expectNear(values(out->at("view_1")), values(out->at("linear")), 1e-5, "Conv1D vs linear");
}

// Python precedence of the bitwise operators: `|` below `^` below `&`
// below `+`, comparisons below all of them; `~` binds to its operand.
TEST(FxTorchLevel, BitwiseOperatorsFollowPythonPrecedence) {
  auto m = fx::parseModule("def forward(self, a: \"b8[2]\"):\n    y = a | b ^ c & ~d < e + f\n    return y\n", "p.py");
  ASSERT_TRUE(m.ok()) << m.error().str();
  EXPECT_EQ(m->body[0].value.str(),
            "operator.lt(operator.or_(a, operator.xor(b, operator.and_(c, operator.invert(d)))), operator.add(e, f))");
}

// ------------------------------------------------------------------ errors

Error importError(const std::string& body, const std::string& name = "dyn.py") {
  std::string text = "class GraphModule(torch.nn.Module):\n    def forward(self, L_x_: \"f32[2, 3]\"):\n"
                     "        l_x_ = L_x_\n" + body;
  auto g = importFxText(text, name);
  EXPECT_FALSE(g.ok());
  return g.ok() ? Error{} : g.error();
}

TEST(FxTorchLevel, UnknownFunctionNamesItAndTheLine) {
  Error e = importError("         # File: /m.py:3 in forward, code: y = torch.frobnicate(x)\n"
                        "        frob: \"f32[2, 3]\" = torch.frobnicate(l_x_);  l_x_ = None\n"
                        "        return (frob,)\n");
  EXPECT_EQ(e.id, "fx-unsupported-op");
  EXPECT_EQ(e.location, "dyn.py:5");
  EXPECT_NE(e.message.find("torch-level call torch.frobnicate"), std::string::npos) << e.message;
  EXPECT_NE(e.message.find("node 'frob'"), std::string::npos) << e.message;
}

TEST(FxTorchLevel, UnknownMethodNamesItAndTheLine) {
  Error e = importError("        frob: \"f32[2, 3]\" = l_x_.frobnicate(1)\n        return (frob,)\n");
  EXPECT_EQ(e.id, "fx-unsupported-op");
  EXPECT_EQ(e.location, "dyn.py:4");
  EXPECT_NE(e.message.find("Tensor method 'frobnicate' (l_x_.frobnicate(...))"), std::string::npos) << e.message;
}

// Arguments a translation cannot honor are errors, never dropped.
TEST(FxTorchLevel, UnsupportedArgumentsAreRejected) {
  struct Case {
    const char* stmt;
    const char* id;
    const char* text;
  };
  const Case cases[] = {
      {"y: \"f32[2, 3]\" = torch.nn.functional.relu(l_x_, inplace = True)", "fx-unsupported", "graph input"},
      {"y: \"f32[2, 3]\" = torch.nn.functional.gelu(l_x_, approx = 'tanh')", "fx-arg", "'approx'"},
      {"y: \"f32[2, 3]\" = torch.exp(l_x_, 2)", "fx-arg", "positional"},
      {"y: \"f32[2, 3]\" = torch.transpose(l_x_, 0)", "fx-arg", "missing argument 'dim1'"},
      {"y: \"f16[2, 3]\" = l_x_.view(torch.float16)", "fx-unsupported-op", "no form"},
      {"y: \"f32[2, 3]\" = l_x_.frobnicate_(1)", "fx-unsupported-op", "Tensor method 'frobnicate_'"},
      {"y: \"f32[2, 3]\" = l_x_.add_(1)", "fx-unsupported", "graph input"},
      {"y: \"f32[]\" = torch.nn.functional.cross_entropy(l_x_, l_x_, label_smoothing = 0.1)", "fx-unsupported",
       "label_smoothing"},
      {"y: \"f32[2, 3]\" = l_x_[[[0, 1]]]", "fx-unsupported", "list"},
      {"y: \"f32[2]\" = l_x_[(L_x_, 0)]", "fx-unsupported", "advanced indexing"},
      {"y = torch.amp.autocast_mode._enter_autocast('cuda', torch.bfloat16, True, None)", "fx-unsupported",
       "autocast region"},
      {"y: \"f32[2, 3]\" = torch.repeat_interleave(l_x_, l_x_)", "fx-unsupported-op", "no form"},
  };
  for (const auto& c : cases) {
    Error e = importError(std::string("        ") + c.stmt + "\n        return (y,)\n");
    EXPECT_EQ(e.id, c.id) << c.stmt << ": " << e.str();
    EXPECT_NE(e.message.find(c.text), std::string::npos) << c.stmt << ": " << e.str();
    EXPECT_EQ(e.location, "dyn.py:4") << c.stmt;
  }
}

// Grad mode switches compute nothing; functional collectives called as op
// packets (`torch.ops._c10d_functional.all_reduce(...)`, no overload)
// import as their `.default` overloads.
TEST(FxTorchLevel, GradModeAndCollectivePacketsImport) {
  auto g = importFxText(R"FX(
class GraphModule(torch.nn.Module):
    def forward(self, L_x_: "f32[2, 3]"):
        l_x_ = L_x_
        _set_grad_enabled = torch._C._set_grad_enabled(False);  _set_grad_enabled = None
        all_reduce: "f32[2, 3]" = torch.ops._c10d_functional.all_reduce(l_x_, 'sum', '0')
        wait_tensor: "f32[2, 3]" = torch.ops._c10d_functional.wait_tensor(all_reduce);  all_reduce = None
        _set_grad_enabled_1 = torch._C._set_grad_enabled(True);  _set_grad_enabled_1 = None
        return (wait_tensor,)
)FX",
                        "ar.py");
  ASSERT_TRUE(g.ok()) << g.error().str();
  // one rank: the all_reduce is the identity
  auto out = ir::runGraph(*g, {{"L_x_", typed(DType::F32, {2, 3}, {1, 2, 3, 4, 5, 6})}});
  ASSERT_TRUE(out.ok()) << out.error().str();
  EXPECT_EQ(values(out->at("wait_tensor")), (std::vector<double>{1, 2, 3, 4, 5, 6}));
}

}  // namespace
}  // namespace sp::frontend

// Torch-level callables lowered to compositions of IR ops
// (fx_ops_compose.cpp, fx_ops_einsum.cpp) against hand-computed values and,
// for einsum, a brute-force evaluation of the equation; subscripts with
// constant lists; and the data-dependent forms, which are errors.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>

#include "frontend/fx_import.h"
#include "frontend/fx_parser.h"
#include "frontend/fx_test_util.h"
#include "ir/interpreter.h"

namespace sp::frontend {
namespace {

using ir::DType;
using ir::Tensor;
using fx_test::noise;
using fx_test::typed;
using fx_test::values;

std::string graph(const std::string& sig, const std::string& body) {
  return "class GraphModule(torch.nn.Module):\n    def forward(self, " + sig + "):\n" + body;
}

ir::TensorMap run(const std::string& text, const ir::TensorMap& in) {
  auto g = importFxText(text, "compose.py");
  EXPECT_TRUE(g.ok()) << (g.ok() ? "" : g.error().str()) << "\n" << text;
  if (!g.ok()) return {};
  auto out = ir::runGraph(*g, in);
  EXPECT_TRUE(out.ok()) << (out.ok() ? "" : out.error().str());
  return out.ok() ? *out : ir::TensorMap{};
}

const double kInf = std::numeric_limits<double>::infinity();

TEST(FxTorchCompose, CumsumMatchesHandValues) {
  auto out = run(graph("L_x_: \"f32[2, 3]\", L_m_: \"i64[2, 3]\", L_f_: \"f32[3]\"", R"FX(
        l_x_ = L_x_
         # File: /m.py:3 in forward, code: a = x.cumsum(1)
        a: "f32[2, 3]" = l_x_.cumsum(1)
        b: "f32[2, 3]" = torch.cumsum(l_x_, dim = 0)
        c: "f64[2, 3]" = torch.cumsum(l_x_, -1, dtype = torch.float64)
         # File: /hf/modeling_qwen2.py:120 in forward, code: position_ids = attention_mask.long().cumsum(-1) - 1
        long: "i64[2, 3]" = L_m_.long()
        cumsum_1: "i64[2, 3]" = long.cumsum(-1)
        sub: "i64[2, 3]" = cumsum_1 - 1
        d: "f32[3]" = L_f_.cumsum(0)
        return (a, b, c, sub, d)
)FX"),
                 {{"L_x_", typed(DType::F32, {2, 3}, {1, 2, 3, 4, 5, 6})},
                  {"L_m_", typed(DType::I64, {2, 3}, {0, 1, 1, 1, 1, 1})},
                  {"L_f_", typed(DType::F32, {3}, {1, kInf, 2})}});
  ASSERT_FALSE(out.empty());
  EXPECT_EQ(values(out.at("a")), (std::vector<double>{1, 3, 6, 4, 9, 15}));
  EXPECT_EQ(values(out.at("b")), (std::vector<double>{1, 2, 3, 5, 7, 9}));
  EXPECT_EQ(values(out.at("c")), (std::vector<double>{1, 3, 6, 4, 9, 15}));
  EXPECT_EQ(out.at("c").dtype(), DType::F64);
  EXPECT_EQ(values(out.at("sub")), (std::vector<double>{-1, 0, 1, 0, 1, 2}));
  // an inf stays where torch keeps it (a matmul with a 0/1 matrix would give nan)
  EXPECT_EQ(values(out.at("d")), (std::vector<double>{1, kInf, kInf}));
}

TEST(FxTorchCompose, PadMatchesHandValues) {
  auto out = run(graph("L_x_: \"f32[2, 3]\"", R"FX(
        a: "f32[2, 6]" = torch.nn.functional.pad(L_x_, (1, 2))
        b: "f32[3, 3]" = torch._C._nn.pad(L_x_, [0, 0, 1, 0])
        c: "f32[2, 3]" = torch.nn.functional.pad(L_x_, (-1, 1), mode = 'constant', value = 9.0)
        d: "f32[4, 2]" = torch.nn.functional.pad(L_x_, (0, -1, 1, 1), 'constant', -1)
        return (a, b, c, d)
)FX"),
                 {{"L_x_", typed(DType::F32, {2, 3}, {1, 2, 3, 4, 5, 6})}});
  ASSERT_FALSE(out.empty());
  EXPECT_EQ(values(out.at("a")), (std::vector<double>{0, 1, 2, 3, 0, 0, 0, 4, 5, 6, 0, 0}));
  EXPECT_EQ(values(out.at("b")), (std::vector<double>{0, 0, 0, 1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(values(out.at("c")), (std::vector<double>{2, 3, 9, 5, 6, 9}));
  EXPECT_EQ(values(out.at("d")), (std::vector<double>{-1, -1, 1, 2, 4, 5, -1, -1}));
}

TEST(FxTorchCompose, OneHotIndexAddAndListSubscripts) {
  auto out = run(graph("L_i_: \"i64[3]\", L_z_: \"f32[4, 2]\", L_s_: \"f32[3, 2]\", L_x_: \"f32[3, 4]\"", R"FX(
        a: "i64[3, 3]" = torch.nn.functional.one_hot(L_i_, num_classes = 3)
        b: "f32[4, 2]" = L_z_.index_add(0, L_i_, L_s_)
        c: "f32[4, 2]" = torch.index_add(L_z_, 0, L_i_, L_s_, alpha = -1)
        d: "f32[3, 4]" = L_x_[[2, 0, -1]]
        e: "f32[3, 2]" = L_x_[(slice(None, None, None), [1, 3])]
        f: "f32[3, 1]" = L_x_[(Ellipsis, [0])]
        return (a, b, c, d, e, f)
)FX"),
                 {{"L_i_", typed(DType::I64, {3}, {0, 2, 0})},
                  {"L_z_", typed(DType::F32, {4, 2}, std::vector<double>(8, 0))},
                  {"L_s_", typed(DType::F32, {3, 2}, {1, 2, 3, 4, 5, 6})},
                  {"L_x_", typed(DType::F32, {3, 4}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11})}});
  ASSERT_FALSE(out.empty());
  EXPECT_EQ(values(out.at("a")), (std::vector<double>{1, 0, 0, 0, 0, 1, 1, 0, 0}));
  EXPECT_EQ(values(out.at("b")), (std::vector<double>{6, 8, 0, 0, 3, 4, 0, 0}));  // repeated indices add up
  EXPECT_EQ(values(out.at("c")), (std::vector<double>{-6, -8, 0, 0, -3, -4, 0, 0}));
  EXPECT_EQ(values(out.at("d")), (std::vector<double>{8, 9, 10, 11, 0, 1, 2, 3, 8, 9, 10, 11}));
  EXPECT_EQ(values(out.at("e")), (std::vector<double>{1, 3, 5, 7, 9, 11}));
  EXPECT_EQ(values(out.at("f")), (std::vector<double>{0, 4, 8}));
}

// ---------------------------------------------------------------- einsum

struct Operand {
  std::string name, type;
};
const Operand kOperands[] = {{"A", "f32[2, 3, 4]"}, {"B", "f32[4, 5]"}, {"C", "f32[2, 4, 5]"}, {"V", "f32[4]"},
                             {"U", "f32[3]"},       {"M", "f32[3, 4]"}, {"E", "f32[2, 3, 5]"}, {"S", "f32[3, 3]"},
                             {"N", "f32[1, 4, 5]"}};

std::vector<int64_t> dimsOf(const std::string& type) {
  auto t = fx::parseTensorAnnotation(type);
  std::vector<int64_t> d;
  for (const auto& x : t->shape) d.push_back(x.value());
  return d;
}

// out[o] = Σ over all labels not in o of Π operands: `eq` explicit, letters only.
std::vector<double> bruteForce(const std::string& eq, const std::vector<const Tensor*>& ops) {
  size_t arrow = eq.find("->");
  std::vector<std::string> terms;
  std::string lhs = eq.substr(0, arrow);
  for (size_t at = 0;;) {
    size_t c = lhs.find(',', at);
    terms.push_back(lhs.substr(at, c == std::string::npos ? std::string::npos : c - at));
    if (c == std::string::npos) break;
    at = c + 1;
  }
  std::string outLabels = eq.substr(arrow + 2);
  std::map<char, int64_t> size;
  for (size_t k = 0; k < terms.size(); ++k)
    for (size_t d = 0; d < terms[k].size(); ++d) size[terms[k][d]] = ops[k]->dims()[d];
  std::vector<char> labels;
  for (const auto& [l, n] : size) labels.push_back(l);
  int64_t outN = 1;
  for (char l : outLabels) outN *= size[l];
  std::vector<double> out(size_t(outN), 0.0);
  std::map<char, int64_t> at;
  for (char l : labels) at[l] = 0;
  auto flat = [&](const std::string& term, const std::vector<int64_t>& dims) {
    int64_t f = 0;
    for (size_t d = 0; d < term.size(); ++d) f = f * dims[d] + at[term[d]];
    return f;
  };
  while (true) {
    double p = 1;
    for (size_t k = 0; k < terms.size(); ++k) p *= ops[k]->getAsDouble(flat(terms[k], ops[k]->dims()));
    std::vector<int64_t> od;
    for (char l : outLabels) od.push_back(size[l]);
    out[size_t(flat(outLabels, od))] += p;
    size_t k = 0;
    for (; k < labels.size(); ++k) {
      if (++at[labels[k]] < size[labels[k]]) break;
      at[labels[k]] = 0;
    }
    if (k == labels.size()) break;
  }
  return out;
}

TEST(FxTorchCompose, EinsumMatchesABruteForceEvaluation) {
  struct Case {
    const char* call;  // the torch-level call
    const char* ref;   // the explicit letters-only equation it computes
    std::vector<const char*> ops;
    const char* type;
  };
  const std::vector<Case> cases = {
      {"torch.einsum('bij,jk->bik', A, B)", "bij,jk->bik", {"A", "B"}, "f32[2, 3, 5]"},
      {"torch.einsum('bij,bjk->bik', A, C)", "bij,bjk->bik", {"A", "C"}, "f32[2, 3, 5]"},
      {"torch.einsum('bij->bji', A)", "bij->bji", {"A"}, "f32[2, 4, 3]"},
      {"torch.einsum('bij->', A)", "bij->", {"A"}, "f32[]"},
      {"torch.einsum('bij->j', A)", "bij->j", {"A"}, "f32[4]"},
      {"torch.einsum('i,i->', V, V)", "i,i->", {"V", "V"}, "f32[]"},
      {"torch.einsum('i,j->ij', U, V)", "i,j->ij", {"U", "V"}, "f32[3, 4]"},
      {"torch.einsum('ij,ij->ij', M, M)", "ij,ij->ij", {"M", "M"}, "f32[3, 4]"},
      {"torch.einsum('bij,jk,bik->b', A, B, E)", "bij,jk,bik->b", {"A", "B", "E"}, "f32[2]"},
      {"torch.einsum('ij,bjk->bki', M, C)", "ij,bjk->bki", {"M", "C"}, "f32[2, 5, 3]"},
      {"torch.einsum('bij,bkj->bik', A, A)", "bij,bkj->bik", {"A", "A"}, "f32[2, 3, 3]"},
      {"torch.einsum('bij,bjk', A, C)", "bij,bjk->ik", {"A", "C"}, "f32[3, 5]"},
      {"torch.einsum('ij,jk', M, B)", "ij,jk->ik", {"M", "B"}, "f32[3, 5]"},
      {"torch.einsum('ba', M)", "ba->ab", {"M"}, "f32[4, 3]"},
      {"torch.einsum('ij,ik->', S, M)", "ij,ik->", {"S", "M"}, "f32[]"},
      {"torch.einsum('Bij,jK->BiK', A, B)", "Bij,jK->BiK", {"A", "B"}, "f32[2, 3, 5]"},
      {"torch.einsum('b i j, j k -> b k', [A, B])", "bij,jk->bk", {"A", "B"}, "f32[2, 5]"},
      {"torch.einsum('...ij,jk->...ik', A, B)", "bij,jk->bik", {"A", "B"}, "f32[2, 3, 5]"},
      {"torch.einsum('...j,...j->...', A, V)", "bij,j->bi", {"A", "V"}, "f32[2, 3]"},
      {"torch.einsum('...ij,jk', A, B)", "bij,jk->bik", {"A", "B"}, "f32[2, 3, 5]"},
      {"torch.einsum('b...j,jk->bk', A, B)", "bij,jk->bk", {"A", "B"}, "f32[2, 5]"},
      {"torch.einsum('i...->...', S)", "ij->j", {"S"}, "f32[3]"},
      // a broadcast dim of size 1 (N is B with a leading 1)
      {"torch.einsum('...ij,...jk->...ik', A, N)", "bij,jk->bik", {"A", "B"}, "f32[2, 3, 5]"},
      {"torch.einsum('...jk,...ij->...ki', N, A)", "jk,bij->bki", {"B", "A"}, "f32[2, 5, 3]"},
  };
  std::string sig, body, ret;
  ir::TensorMap in;
  uint32_t seed = 11;
  for (const auto& o : kOperands) {
    sig += std::string(sig.empty() ? "" : ", ") + o.name + ": \"" + o.type + "\"";
    auto d = dimsOf(o.type);
    int64_t n = 1;
    for (int64_t x : d) n *= x;
    in[o.name] = typed(DType::F32, d, noise(size_t(n), seed++));
  }
  in["N"] = typed(DType::F32, {1, 4, 5}, values(in.at("B")));
  for (size_t k = 0; k < cases.size(); ++k) {
    body += "        e" + std::to_string(k) + ": \"" + cases[k].type + "\" = " + cases[k].call + "\n";
    ret += "e" + std::to_string(k) + ", ";
  }
  auto out = run(graph(sig, body + "        return (" + ret + ")\n"), in);
  ASSERT_FALSE(out.empty());
  for (size_t k = 0; k < cases.size(); ++k) {
    std::vector<const Tensor*> ops;
    for (const char* o : cases[k].ops) ops.push_back(&in.at(o));
    fx_test::expectNear(values(out.at("e" + std::to_string(k))), bruteForce(cases[k].ref, ops), 1e-5, cases[k].call);
  }
}

// ---------------------------------------------------------------- errors

Error importError(const std::string& stmt) {
  std::string text = graph("L_x_: \"f32[2, 3]\", L_m_: \"b8[2, 3]\", L_i_: \"i64[2]\"",
                           "        l_x_ = L_x_\n        " + stmt + "\n        return (y,)\n");
  auto g = importFxText(text, "bad.py");
  EXPECT_FALSE(g.ok()) << stmt;
  return g.ok() ? Error{} : g.error();
}

TEST(FxTorchCompose, UnsupportedFormsAreClearErrors) {
  struct Case {
    const char* stmt;
    const char* id;
    std::vector<const char*> text;
  };
  const Case cases[] = {
      {"y: \"i64[u0, 2]\" = torch.where(L_m_)", "fx-data-dependent", {"torch.where", "node 'y'", "size depends"}},
      {"y: \"i64[u0, 2]\" = torch.nonzero(L_m_)", "fx-data-dependent", {"torch.nonzero", "node 'y'"}},
      {"y: \"i64[u0, 2]\" = L_m_.nonzero()", "fx-data-dependent", {"nonzero", "node 'y'"}},
      {"y: \"f32[u0]\" = l_x_[L_m_]", "fx-data-dependent", {"node 'y'", "boolean mask", "'L_m_'"}},
      {"y: \"i64[2, 2]\" = torch.nn.functional.one_hot(L_i_)", "fx-data-dependent", {"num_classes", "'y'"}},
      {"y: \"f32[2]\" = torch.einsum('ii->i', l_x_)", "fx-unsupported", {"diagonal", "'ii->i'"}},
      {"y: \"f32[2]\" = torch.einsum('ij,jk->ik', l_x_)", "fx-arg", {"2 operand terms but 1 tensors"}},
      {"y: \"f32[2]\" = torch.einsum('ijk->i', l_x_)", "fx-arg", {"3 labels", "f32[2, 3]"}},
      {"y: \"f32[2]\" = torch.einsum('ij->q', l_x_)", "fx-arg", {"'q' is in no operand"}},
      {"y: \"f32[2, 5]\" = torch.nn.functional.pad(l_x_, (1, 1), 'reflect')", "fx-unsupported-op",
       {"torch.nn.functional.pad", "no form", "mode = 'reflect'"}},
      {"y: \"f32[2, 5]\" = torch.nn.functional.pad(l_x_, (1, 1, 1))", "fx-arg", {"pairs"}},
      {"y: \"f32[2, 3]\" = l_x_[[0, 5]]", "fx-index", {"index 5", "size 2"}},
      {"y: \"f32[2, 3]\" = l_x_[(0, [0, 1])]", "fx-unsupported", {"advanced indexing"}},
      // declared dtypes the composition would otherwise absorb with a cast
      {"y: \"f64[2, 3]\" = l_x_.cumsum(1)", "type-mismatch", {"cumsum of f32[2, 3] is f32", "declared f64"}},
      {"y: \"f64[2, 2]\" = torch.einsum('ij,kj->ik', l_x_, l_x_)", "type-mismatch", {"operand 0", "f64"}},
      {"y: \"i32[2, 2]\" = torch.nn.functional.one_hot(L_i_, 2)", "type-mismatch", {"one_hot is i64"}},
  };
  for (const auto& c : cases) {
    Error e = importError(c.stmt);
    EXPECT_EQ(e.id, c.id) << c.stmt << ": " << e.str();
    for (const char* t : c.text) EXPECT_NE(e.message.find(t), std::string::npos) << t << " in " << e.str();
    EXPECT_EQ(e.location, "bad.py:4") << c.stmt;
  }
}

}  // namespace
}  // namespace sp::frontend

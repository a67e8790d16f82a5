// In-place comparisons (`x.lt_(y)`: the bool result written into x's
// dtype as 1 and 0, as torch) and `x[mask] += v` (FX's getitem, in-place
// operator, setitem; fx_masked_update.h) as where(mask, x + v, x), checked
// against values worked out from torch's semantics; the forms that cannot
// be represented exactly stay refused.
#include <gtest/gtest.h>

#include "frontend/fx_import.h"
#include "frontend/fx_test_util.h"
#include "ir/interpreter.h"

namespace sp::frontend {
namespace {

using fx_test::typed;
using fx_test::values;
using ir::DType;

const std::vector<std::pair<std::string, std::string>> kInputs = {
    {"x", "f32[4]"},  {"y", "f32[4]"},  {"i", "i64[4]"},    {"yf", "f32[4]"}, {"h", "f16[4]"},
    {"b", "b8[4]"},   {"b2", "b8[4]"},  {"a", "f32[3, 4]"}, {"m", "b8[3]"},   {"v", "f32[4]"},
    {"v1", "f32[1, 4]"}, {"m2", "b8[3, 4]"}, {"v2", "f32[2, 4]"}, {"t", "i64[3]"}, {"ah", "f16[3, 4]"}};

ir::TensorMap inputs() {
  return {{"L_x_", typed(DType::F32, {4}, {1, 5, 0, -2})},
          {"L_y_", typed(DType::F32, {4}, {2, 2, 0, -2})},
          {"L_i_", typed(DType::I64, {4}, {1, 5, 0, -2})},
          {"L_yf_", typed(DType::F32, {4}, {1.5, 4.5, 0, -2.5})},
          {"L_h_", typed(DType::F16, {4}, {1, 5, 0, -2})},
          {"L_b_", typed(DType::Bool, {4}, {1, 0, 1, 0})},
          {"L_b2_", typed(DType::Bool, {4}, {1, 1, 0, 0})},
          {"L_a_", typed(DType::F32, {3, 4}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11})},
          {"L_m_", typed(DType::Bool, {3}, {1, 0, 1})},
          {"L_v_", typed(DType::F32, {4}, {100, 101, 102, 103})},
          {"L_v1_", typed(DType::F32, {1, 4}, {1, 2, 4, 8})},
          {"L_m2_", typed(DType::Bool, {3, 4}, {1, 0, 0, 1, 0, 1, 0, 0, 0, 0, 1, 1})},
          {"L_v2_", typed(DType::F32, {2, 4}, {1, 1, 1, 1, 2, 2, 2, 2})},
          {"L_t_", typed(DType::I64, {3}, {7, 8, 9})},
          {"L_ah_", typed(DType::F16, {3, 4}, {2048, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11})}};
}

Result<ir::Graph> import(const std::string& body, FxPartial* partial = nullptr) {
  FxOptions o;
  o.partial = partial;
  return importFxText(fx_test::dynamoHeader(kInputs) + body, "mask.py", o);
}

// (dtype, values) of output k.
std::pair<DType, std::vector<double>> output(const ir::Graph& g, size_t k) {
  auto r = ir::runGraph(g, inputs());
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().str());
  if (!r.ok()) return {};
  const auto& t = r->at(g.value(g.outputs()[k]).name);
  return {t.dtype(), values(t)};
}

// x = [1, 5, 0, -2], y = [2, 2, 0, -2]: each in-place comparison writes
// its bool result into the tensor's own dtype (torch: "in-place version of
// lt()", the result cast to self's dtype), computing in the operands'
// promoted dtype (i64 [1, 5, 0, -2] < f32 [1.5, 4.5, 0, -2.5] compares in
// f32); a bool tensor stays bool.
TEST(FxInPlaceCompare, ResultIsOneOrZeroInTheTensorsDtype) {
  struct Row {
    const char* stmt;
    DType dtype;
    std::vector<double> want;
  };
  const Row rows[] = {
      {"c: \"f32[4]\" = x.clone()\n        r: \"f32[4]\" = c.lt_(y)", DType::F32, {1, 0, 0, 0}},
      {"c: \"f32[4]\" = x.clone()\n        r: \"f32[4]\" = c.le_(y)", DType::F32, {1, 0, 1, 1}},
      {"c: \"f32[4]\" = x.clone()\n        r: \"f32[4]\" = c.gt_(y)", DType::F32, {0, 1, 0, 0}},
      {"c: \"f32[4]\" = x.clone()\n        r: \"f32[4]\" = c.eq_(y)", DType::F32, {0, 0, 1, 1}},
      {"c: \"f32[4]\" = x.clone()\n        r: \"f32[4]\" = c.ne_(y)", DType::F32, {1, 1, 0, 0}},
      {"c: \"f32[4]\" = x.clone()\n        r: \"f32[4]\" = c.ge_(3)", DType::F32, {0, 1, 0, 0}},
      {"c: \"f32[4]\" = x.clone()\n        r: \"f32[4]\" = c.logical_not_()", DType::F32, {0, 0, 1, 0}},
      {"c: \"f32[4]\" = x.clone()\n        r: \"f32[4]\" = c.logical_and_(y)", DType::F32, {1, 1, 0, 1}},
      {"c: \"i64[4]\" = i.clone()\n        r: \"i64[4]\" = c.lt_(yf)", DType::I64, {1, 0, 0, 0}},
      {"c: \"f16[4]\" = h.clone()\n        r: \"f16[4]\" = c.eq_(y)", DType::F16, {0, 0, 1, 1}},
      {"c: \"b8[4]\" = b.clone()\n        r: \"b8[4]\" = c.logical_and_(b2)", DType::Bool, {1, 0, 0, 0}},
  };
  for (const auto& row : rows) {
    SCOPED_TRACE(row.stmt);
    // c itself is returned too: the mutated name reads the new value
    auto g = import(std::string("        ") + row.stmt + "\n        return (r, c)\n");
    ASSERT_TRUE(g.ok()) << g.error().str();
    EXPECT_EQ(output(*g, 0), std::make_pair(row.dtype, row.want));
    EXPECT_EQ(output(*g, 1), std::make_pair(row.dtype, row.want));
  }
}

// `c[m] += v` over a = [[0..3], [4..7], [8..11]], m = [1, 0, 1]: rows 0 and
// 2 get v added; row 1 is a's.
TEST(FxMaskedUpdate, AddsWhereTheMaskIsTrue) {
  struct Row {
    std::string body;  // over c = a.clone() (or ah, t), returns (c, ...)
    DType dtype;
    std::vector<double> want;
  };
  const std::string clone = "        c: \"f32[3, 4]\" = a.clone()\n";
  const Row rows[] = {
      {clone + R"FX(        getitem: "f32[u0, 4]" = c[m]
        getitem += v;  iadd: "f32[u0, 4]" = getitem
        c[m] = iadd;  setitem = c
)FX",
       DType::F32, {100, 102, 104, 106, 4, 5, 6, 7, 108, 110, 112, 114}},
      // a number; -=, *=, /= with a [1, 4] operand (its dim at the count 1)
      {clone + R"FX(        getitem: "f32[u0, 4]" = c[m]
        getitem += 1.5;  iadd: "f32[u0, 4]" = getitem
        c[m] = iadd;  setitem = c
)FX",
       DType::F32, {1.5, 2.5, 3.5, 4.5, 4, 5, 6, 7, 9.5, 10.5, 11.5, 12.5}},
      {clone + R"FX(        getitem: "f32[u0, 4]" = c[m]
        getitem -= v1;  isub: "f32[u0, 4]" = getitem
        c[m] = isub;  setitem = c
)FX",
       DType::F32, {-1, -1, -2, -5, 4, 5, 6, 7, 7, 7, 6, 3}},
      {clone + R"FX(        getitem: "f32[u0, 4]" = c[m]
        getitem *= v1;  imul: "f32[u0, 4]" = getitem
        c[m] = imul;  setitem = c
)FX",
       DType::F32, {0, 2, 8, 24, 4, 5, 6, 7, 8, 18, 40, 88}},
      {clone + R"FX(        getitem: "f32[u0, 4]" = c[m]
        getitem /= v1;  itruediv: "f32[u0, 4]" = getitem
        c[m] = itruediv;  setitem = c
)FX",
       DType::F32, {0, 0.5, 0.5, 0.375, 4, 5, 6, 7, 8, 4.5, 2.5, 1.375}},
      // a mask of all of c's dims: the selected elements, [u0]
      {clone + R"FX(        getitem: "f32[u0]" = c[m2]
        getitem += 10;  iadd: "f32[u0]" = getitem
        c[m2] = iadd;  setitem = c
)FX",
       DType::F32, {10, 1, 2, 13, 4, 15, 6, 7, 8, 9, 20, 21}},
      // two operators in a row, and the value computed between the getitem and the first
      {clone + R"FX(        getitem: "f32[u0, 4]" = c[m]
        mul: "f32[4]" = v * 2
        getitem += mul;  iadd: "f32[u0, 4]" = getitem
        iadd *= 0.5;  imul: "f32[u0, 4]" = iadd
        c[m] = imul;  setitem = c
)FX",
       DType::F32, {100, 101.5, 103, 104.5, 4, 5, 6, 7, 104, 105.5, 107, 108.5}},
      // an integer tensor; an f16 one with an f32 operand computes in f32 and
      // rounds back: 2048 + 1 is not an f16 (ties to even: 2048)
      {R"FX(        c: "i64[3]" = t.clone()
        getitem: "i64[u0]" = c[m]
        getitem += 5;  iadd: "i64[u0]" = getitem
        c[m] = iadd;  setitem = c
)FX",
       DType::I64, {12, 8, 14}},
      {R"FX(        c: "f16[3, 4]" = ah.clone()
        getitem: "f16[u0, 4]" = c[m]
        getitem += v1;  iadd: "f16[u0, 4]" = getitem
        c[m] = iadd;  setitem = c
)FX",
       DType::F16, {2048, 3, 6, 11, 4, 5, 6, 7, 9, 11, 14, 19}},
  };
  for (const auto& row : rows) {
    SCOPED_TRACE(row.body);
    auto g = import(row.body + "        return (c, setitem)\n");
    ASSERT_TRUE(g.ok()) << g.error().str();
    EXPECT_EQ(output(*g, 0), std::make_pair(row.dtype, row.want));
    EXPECT_EQ(output(*g, 1), std::make_pair(row.dtype, row.want));
  }
}

// Forms that are not where(mask, x + v, x) stay what they were: the
// getitem's data-dependent size (an operand of the count's shape, which
// torch accepts only when the count matches; the copy read after the
// write; a mask that is not c's leading dims), and the graph-input error.
TEST(FxMaskedUpdate, OtherFormsStayRefused) {
  struct Row {
    std::string body;
    const char* id;
    int line;
  };
  const std::string clone = "        c: \"f32[3, 4]\" = a.clone()\n";
  const Row rows[] = {
      {clone + R"FX(        getitem: "f32[u0, 4]" = c[m]
        getitem += v2;  iadd: "f32[u0, 4]" = getitem
        c[m] = iadd;  setitem = c
)FX",
       "fx-data-dependent", 19},
      {clone + R"FX(        getitem: "f32[u0, 4]" = c[m]
        getitem += v;  iadd: "f32[u0, 4]" = getitem
        c[m] = iadd;  setitem = c
        s: "f32[]" = iadd.sum()
)FX",
       "fx-data-dependent", 19},
      {clone + R"FX(        getitem: "f32[u0]" = c[b]
        getitem += 1.0;  iadd: "f32[u0]" = getitem
        c[b] = iadd;  setitem = c
)FX",
       "fx-data-dependent", 19},
      {R"FX(        getitem: "f32[u0, 4]" = a[m]
        getitem += v;  iadd: "f32[u0, 4]" = getitem
        a[m] = iadd;  setitem = a
)FX",
       "fx-unsupported", 20},
  };
  for (const auto& row : rows) {
    SCOPED_TRACE(row.body);
    auto g = import(row.body + "        return (setitem,)\n");
    ASSERT_FALSE(g.ok());
    EXPECT_EQ(g.error().id, row.id) << g.error().str();
    EXPECT_EQ(g.error().location, "mask.py:" + std::to_string(row.line)) << g.error().str();
  }
}

// In a partial import, a chain that does not fit leaves c out (from the
// getitem on), naming the getitem; the rest stays.
TEST(FxMaskedUpdate, PartialImportLeavesOutAChainThatDoesNotFit) {
  FxPartial p;
  auto g = import(R"FX(        c: "f32[3, 4]" = a.clone()
        getitem: "f32[u0, 4]" = c[m]
        getitem += v2;  iadd: "f32[u0, 4]" = getitem
        c[m] = iadd;  setitem = c
        d: "f32[3, 4]" = a * 2.0
        return (c, d)
)FX",
                  &p);
  ASSERT_TRUE(g.ok()) << g.error().str();
  ASSERT_EQ(g->outputs().size(), 1u);
  EXPECT_EQ(g->value(g->outputs()[0]).name, "d");
  ASSERT_EQ(p.outputs.size(), 1u);
  EXPECT_EQ(p.outputs[0].name, "c");
  EXPECT_EQ(p.outputs[0].op, "operator.getitem");
  EXPECT_EQ(p.outputs[0].location, "mask.py:19");
}

}  // namespace
}  // namespace sp::frontend

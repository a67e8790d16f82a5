// In-place comparisons (`x.lt_(y)`: the bool result written into x's
// dtype as 1 and 0, as torch), checked against values worked out from
// torch's semantics.
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

}  // namespace
}  // namespace sp::frontend

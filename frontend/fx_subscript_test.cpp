// Subscripts of torch-level graphs: Python's slice syntax (`x[:, 0]`,
// `x[1:3]`, `x[::2, None, ...]`) read as FX's `slice(a, b, c)` form, in
// reads (`operator.getitem`) and in subscript assignment
// (`operator.setitem`), with the same graphs and the same errors.
#include <gtest/gtest.h>

#include "frontend/fx_import.h"
#include "frontend/fx_parser.h"
#include "frontend/fx_test_util.h"
#include "ir/interpreter.h"
#include "ir/text.h"

namespace sp::frontend {

namespace {

using fx_test::values;

const char* kInputs[][2] = {{"x", "f32[4, 6, 8]"}, {"y", "f32[6, 8]"}, {"v", "f32[8]"}, {"i", "i64[2]"}};

Result<ir::Graph> importBody(const std::string& body, const std::string& name = "slices.py") {
  return importFxText(fx_test::dynamoHeader(kInputs) + body, name);
}

// The statement `stmt` of a forward body, as the parser reads it.
std::string parsed(const std::string& stmt) {
  auto m = fx::parseModule("def forward(self, x, c):\n    " + stmt + "\n    return (x,)\n", "p.py");
  EXPECT_TRUE(m.ok()) << stmt << (m.ok() ? "" : m.error().str());
  return m.ok() ? m->body[0].value.str() : "";
}

// `a:b:c` in a subscript is the call `slice(a, b, c)` (an omitted bound
// None), items separated by commas a tuple, `...` Ellipsis: what FX prints.
TEST(FxSliceSyntax, SlicesParseAsFxSliceCalls) {
  const std::pair<const char*, const char*> rows[] = {
      {"a = x[:, 0]", "x[(slice(None, None, None), 0)]"},
      {"a = x[1:3]", "x[slice(1, 3, None)]"},
      {"a = x[::2, None, ...]", "x[(slice(None, None, 2), None, Ellipsis)]"},
      {"a = x[:-1]", "x[slice(None, -1, None)]"},
      {"a = x[0:4:1]", "x[slice(0, 4, 1)]"},
      {"a = x[1:]", "x[slice(1, None, None)]"},
      {"a = x[:2, 1::]", "x[(slice(None, 2, None), slice(1, None, None))]"},
      {"a = x[..., :2]", "x[(Ellipsis, slice(None, 2, None))]"},
      {"a = x[n:m:k]", "x[slice(n, m, k)]"},
      {"a = x[0,]", "x[(0,)]"},
      {"a = x[None, i]", "x[(None, i)]"},
      // FX's own form is unchanged
      {"a = x[(slice(None, None, None), 0)]", "x[(slice(None, None, None), 0)]"},
      {"a = x[(Ellipsis, slice(None, 1, None))]", "x[(Ellipsis, slice(None, 1, None))]"},
      // subscript assignment
      {"c[:, 0] = y;  setitem = c", "operator.setitem(c, (slice(None, None, None), 0), y)"},
      {"c[1:3, ...] = 0.0", "operator.setitem(c, (slice(1, 3, None), Ellipsis), 0)"},
  };
  for (const auto& [stmt, want] : rows) EXPECT_EQ(parsed(stmt), want) << stmt;
}

// Each Python form imports as exactly the graph of its FX form, read
// (`a = x[...]`) and written (`c[...] = value`).
TEST(FxSliceSyntax, BothFormsImportTheSameGraph) {
  struct Row {
    const char* python;
    const char* fx;
    const char* type;  // of the read
  };
  const Row rows[] = {
      {"x[:, 0]", "x[(slice(None, None, None), 0)]", "f32[4, 8]"},
      {"x[1:3]", "x[slice(1, 3, None)]", "f32[2, 6, 8]"},
      {"x[::2, None, ...]", "x[(slice(None, None, 2), None, Ellipsis)]", "f32[2, 1, 6, 8]"},
      {"x[:-1]", "x[slice(None, -1, None)]", "f32[3, 6, 8]"},
      {"x[0:4:1]", "x[slice(0, 4, 1)]", "f32[4, 6, 8]"},
      {"x[..., 2:7:3]", "x[(Ellipsis, slice(2, 7, 3))]", "f32[4, 6, 2]"},
      {"x[-2:, 1, :5]", "x[(slice(-2, None, None), 1, slice(None, 5, None))]", "f32[2, 5]"},
      {"x[:, i]", "x[(slice(None, None, None), i)]", "f32[4, 2, 8]"},
  };
  for (const auto& r : rows) {
    SCOPED_TRACE(r.python);
    auto body = [&](const std::string& index) {
      return std::string("        a: \"") + r.type + "\" = " + index + "\n        b: \"" + r.type +
             "\" = a * 2.0\n        return (b,)\n";
    };
    auto py = importBody(body(r.python)), fx = importBody(body(r.fx));
    ASSERT_TRUE(py.ok()) << py.error().str();
    ASSERT_TRUE(fx.ok()) << fx.error().str();
    EXPECT_EQ(ir::printGraph(*py), ir::printGraph(*fx));
  }
  const std::pair<const char*, const char*> writes[] = {
      {"c[:, 0] = v", "c[(slice(None, None, None), 0)] = v"},
      {"c[1:3] = 0.5", "c[slice(1, 3, None)] = 0.5"},
      {"c[::2, None, ...] = y", "c[(slice(None, None, 2), None, Ellipsis)] = y"},
      {"c[1:, 2:, :] = v", "c[(slice(1, None, None), slice(2, None, None), slice(None, None, None))] = v"},
      {"c[:-1, :, 0] = 1.0", "c[(slice(None, -1, None), slice(None, None, None), 0)] = 1.0"},
      {"c[0:4:1] = y", "c[slice(0, 4, 1)] = y"},
      {"c[0] = y", "c[0] = y"},
      {"c[..., :2] = -inf", "c[(Ellipsis, slice(None, 2, None))] = -inf"},
      {"c[:, i] = 0.0", "c[(slice(None, None, None), i)] = 0.0"},
  };
  for (const auto& [python, fx] : writes) {
    SCOPED_TRACE(python);
    auto body = [&](const std::string& stmt) {
      return "        c: \"f32[4, 6, 8]\" = x.clone()\n        " + stmt +
             ";  setitem = c\n        return (setitem,)\n";
    };
    auto py = importBody(body(python)), fxg = importBody(body(fx));
    ASSERT_TRUE(py.ok()) << py.error().str();
    ASSERT_TRUE(fxg.ok()) << fxg.error().str();
    EXPECT_EQ(ir::printGraph(*py), ir::printGraph(*fxg));
  }
}

// Values, as torch computes them on x[i][j][k] = 100 i + 10 j + k.
TEST(FxSliceSyntax, ValuesMatchTorch) {
  std::vector<double> xs;
  for (int a = 0; a < 4; ++a)
    for (int b = 0; b < 6; ++b)
      for (int c = 0; c < 8; ++c) xs.push_back(100 * a + 10 * b + c);
  ir::TensorMap in;
  in["L_x_"] = fx_test::typed(ir::DType::F32, {4, 6, 8}, xs);
  in["L_y_"] = fx_test::typed(ir::DType::F32, {6, 8}, std::vector<double>(48, -1.0));
  in["L_v_"] = fx_test::typed(ir::DType::F32, {8}, std::vector<double>(8, -2.0));
  in["L_i_"] = fx_test::typed(ir::DType::I64, {2}, {5, 0});
  auto g = importBody(R"FX(        a: "f32[3, 3]" = x[1:, -1, ::3]
        b: "f32[2]" = x[:-2, 2, 7]
        c: "f32[4, 6, 8]" = x.clone()
        c[1:3, :, 0] = 0.5;  setitem = c
        d: "f32[4, 2]" = c[:, 0, 0:2:1]
        d0: "f32[4]" = d[:, 0]
        d1: "f32[4]" = d0 * 1.0
        v2: "f32[2]" = v[:2]
        c[-1, ..., 1::6] = v2;  setitem_1 = c
        e: "f32[8]" = c[3, 0, :]
        return (a, b, d1, e)
)FX");
  ASSERT_TRUE(g.ok()) << g.error().str();
  auto out = ir::runGraph(*g, in);
  ASSERT_TRUE(out.ok()) << out.error().str();
  auto got = [&](size_t k) { return values(out->at(g->value(g->outputs()[k]).name)); };
  EXPECT_EQ(got(0), (std::vector<double>{150, 153, 156, 250, 253, 256, 350, 353, 356}));
  EXPECT_EQ(got(1), (std::vector<double>{27, 127}));
  EXPECT_EQ(got(2), (std::vector<double>{0, 0.5, 0.5, 300}));
  EXPECT_EQ(got(3), (std::vector<double>{300, -2, 302, 303, 304, 305, 306, -2}));
}

// Errors are those of the FX form, at the same line: constant bounds only
// (a SymInt bound is the existing error), a positive step; syntax errors
// name the position.
TEST(FxSliceSyntax, BothFormsGiveTheSameErrors) {
  const std::pair<const char*, const char*> rows[] = {
      {"x[:n]", "x[slice(None, n, None)]"},
      {"x[::0]", "x[slice(None, None, 0)]"},
      {"x[::-1]", "x[slice(None, None, -1)]"},
      {"x[0.5:, 0]", "x[(slice(0.5, None, None), 0)]"},
      {"x[:, :, :, 0]", "x[(slice(None, None, None), slice(None, None, None), slice(None, None, None), 0)]"},
  };
  for (const auto& [python, fx] : rows) {
    SCOPED_TRACE(python);
    auto body = [&](const std::string& index) {
      return "        n = x.size(1)\n        a: \"f32[4, 6, 8]\" = " + index + "\n        return (a,)\n";
    };
    auto py = importBody(body(python), "bad.py"), fxg = importBody(body(fx), "bad.py");
    ASSERT_FALSE(py.ok());
    ASSERT_FALSE(fxg.ok());
    EXPECT_EQ(py.error().str(), fxg.error().str());
    EXPECT_EQ(py.error().location, "bad.py:8");
  }
  auto e = importBody("        n = x.size(1)\n        a: \"f32[4, 6, 8]\" = x[:n]\n        return (a,)\n", "bad.py");
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.error().id, "fx-arg");
  EXPECT_NE(e.error().message.find("slice bound n in slice(None, n, None) must be an integer"), std::string::npos)
      << e.error().str();
  // writes: the same checks
  auto w = importBody("        c: \"f32[4, 6, 8]\" = x.clone()\n        c[::0] = 1.0;  setitem = c\n"
                      "        return (setitem,)\n",
                      "bad.py");
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.error().id, "fx-arg");
  EXPECT_EQ(w.error().location, "bad.py:8");
  EXPECT_NE(w.error().message.find("slice step 0 must be positive"), std::string::npos) << w.error().str();
  // Python syntax errors, at their position
  for (const auto& [stmt, at] : std::vector<std::pair<std::string, std::string>>{
           {"a: \"f32[4]\" = x[1:2:3:4]", "bad.py:7:30"}, {"a: \"f32[4]\" = x[]", "bad.py:7:25"}}) {
    SCOPED_TRACE(stmt);
    auto s = importBody("        " + stmt + "\n        return (a,)\n", "bad.py");
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.error().id, "fx-syntax") << s.error().str();
    EXPECT_EQ(s.error().location, at) << s.error().str();
  }
}

}  // namespace
}  // namespace sp::frontend

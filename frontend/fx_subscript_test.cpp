// Subscripts of torch-level graphs: Python's slice syntax (`x[:, 0]`,
// `x[1:3]`, `x[::2, None, ...]`) read as FX's `slice(a, b, c)` form, in
// reads (`operator.getitem`) and in subscript assignment
// (`operator.setitem`), with the same graphs and the same errors; and
// in-place ops on a subscript view written back by a subscript assignment
// (`x[i] += v`, which FX prints as getitem, iadd, setitem).
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

// ---- in-place ops on a view written back (`x[i] += v`) ----

// Small exact values, so that each expected result is written out by hand:
// x[i][k] = 4 i + k.
const char* kWbInputs[][2] = {{"x", "f32[3, 4]"}, {"v", "f32[4]"},    {"col", "f32[3]"}, {"idx", "i64[2]"},
                              {"v2", "f32[2, 1]"}, {"y", "f32[4]"},   {"m", "b8[3]"}};

ir::TensorMap wbInputs() {
  const std::vector<std::vector<double>> v = {{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11},
                                              {100, 101, 102, 103},
                                              {200, 201, 202},
                                              {2, 0},
                                              {50, 60},
                                              {-1, -1, -1, -1},
                                              {1, 0, 1}};
  ir::TensorMap in;
  for (size_t k = 0; k < v.size(); ++k) {
    auto t = fx::parseTensorAnnotation(kWbInputs[k][1]);
    std::vector<int64_t> dims;
    for (const auto& d : t->shape) dims.push_back(d.value());
    in["L_" + std::string(kWbInputs[k][0]) + "_"] = fx_test::typed(t->dtype, dims, v[k]);
  }
  return in;
}

// The body's first line is line 10 (after the 7 alias lines).
Result<ir::Graph> importWb(const std::string& body, const std::string& name = "wb.py") {
  return importFxText(fx_test::dynamoHeader(kWbInputs) + body, name);
}

std::vector<std::vector<double>> wbOutputs(const ir::Graph& g) {
  auto out = ir::runGraph(g, wbInputs());
  EXPECT_TRUE(out.ok()) << (out.ok() ? "" : out.error().str());
  std::vector<std::vector<double>> r;
  if (!out.ok()) return r;
  for (auto o : g.outputs()) r.push_back(values(out->at(g.value(o).name)));
  return r;
}

// `c[i] OP= v` as FX prints it (`getitem = c[i]`; `getitem += v;  iadd =
// getitem`; `c[i] = iadd;  setitem = c`): c's new value, and the view's
// (the getitem and the in-place node, read after the write-back), as torch
// computes them (expected values by hand).
TEST(FxViewWriteBack, AugmentedSubscriptAssignmentMatchesTorch) {
  struct Row {
    const char* getitem;  // `getitem: "T" = c[...]`
    const char* op;       // the in-place statement on getitem, binding iadd
    const char* setitem;  // the write-back of iadd
    std::vector<double> c, view;
  };
  const Row rows[] = {
      // an int: c[1] += v
      {"getitem: \"f32[4]\" = c[1]", "getitem += v;  iadd: \"f32[4]\" = getitem", "c[1] = iadd;  setitem = c",
       {0, 1, 2, 3, 104, 106, 108, 110, 8, 9, 10, 11}, {104, 106, 108, 110}},
      // c[:, 0] += col, in FX's form and in Python's
      {"getitem: \"f32[3]\" = c[(slice(None, None, None), 0)]", "getitem += col;  iadd: \"f32[3]\" = getitem",
       "c[(slice(None, None, None), 0)] = iadd;  setitem = c", {200, 1, 2, 3, 205, 5, 6, 7, 210, 9, 10, 11},
       {200, 205, 210}},
      {"getitem: \"f32[3]\" = c[:, 0]", "getitem += col;  iadd: \"f32[3]\" = getitem", "c[:, 0] = iadd;  setitem = c",
       {200, 1, 2, 3, 205, 5, 6, 7, 210, 9, 10, 11}, {200, 205, 210}},
      // the call form FX prints without pretty-printing, a stepped slice
      {"getitem: \"f32[2, 2]\" = c[0:2, 1::2]", "iadd: \"f32[2, 2]\" = operator.iadd(getitem, 2.0)",
       "c[0:2, 1::2] = iadd;  setitem = c", {0, 3, 2, 5, 4, 7, 6, 9, 8, 9, 10, 11}, {3, 5, 7, 9}},
      // other in-place ops: *=, a method, Ellipsis and None
      {"getitem: \"f32[2, 4]\" = c[1:]", "getitem *= 10;  iadd: \"f32[2, 4]\" = getitem",
       "c[1:] = iadd;  setitem = c", {0, 1, 2, 3, 40, 50, 60, 70, 80, 90, 100, 110},
       {40, 50, 60, 70, 80, 90, 100, 110}},
      {"getitem: \"f32[3, 1, 2]\" = c[..., None, :2]", "iadd: \"f32[3, 1, 2]\" = getitem.clamp_(max = 4.5)",
       "c[..., None, :2] = iadd;  setitem = c", {0, 1, 2, 3, 4, 4.5, 6, 7, 4.5, 4.5, 10, 11},
       {0, 1, 4, 4.5, 4.5, 4.5}},
      // advanced indices copy (torch's index): rows 2 and 0, v2 broadcast over them
      {"getitem: \"f32[2, 4]\" = c[idx]", "getitem += v2;  iadd: \"f32[2, 4]\" = getitem",
       "c[idx] = iadd;  setitem = c", {60, 61, 62, 63, 4, 5, 6, 7, 58, 59, 60, 61},
       {58, 59, 60, 61, 60, 61, 62, 63}},
      {"getitem: \"f32[2, 4]\" = c[[0, 2]]", "getitem -= 1.0;  iadd: \"f32[2, 4]\" = getitem",
       "c[[0, 2]] = iadd;  setitem = c", {-1, 0, 1, 2, 4, 5, 6, 7, 7, 8, 9, 10}, {-1, 0, 1, 2, 7, 8, 9, 10}},
  };
  for (const auto& r : rows) {
    SCOPED_TRACE(r.getitem);
    const std::string g0 = r.getitem, type = g0.substr(g0.find('"'), g0.find('"', g0.find('"') + 1) - g0.find('"') + 1);
    auto g = importWb(std::string("        c: \"f32[3, 4]\" = x.clone()\n        ") + r.getitem + "\n        " + r.op +
                      "\n        " + r.setitem + "\n        u: \"f32[3, 4]\" = c * 1.0\n" +
                      "        w: " + type + " = getitem * 1.0\n        return (setitem, u, iadd, w)\n");
    ASSERT_TRUE(g.ok()) << g.error().str();
    auto out = wbOutputs(*g);
    ASSERT_EQ(out.size(), 4u);
    EXPECT_EQ(out[0], r.c);
    EXPECT_EQ(out[1], r.c);
    EXPECT_EQ(out[2], r.view);
    EXPECT_EQ(out[3], r.view);
  }
}

// Python's `c[0][1:3] += 5` mutates the view c[0] through its own view
// (getitem_1, written back into getitem only): exact while c is not read
// again; its twin, where c is read, is refused (torch's c changes too).
TEST(FxViewWriteBack, WriteBackIntoAViewOfAView) {
  const std::string body = R"FX(        c: "f32[3, 4]" = x.clone()
        getitem: "f32[4]" = c[0]
        getitem_1: "f32[2]" = getitem[slice(1, 3, None)]
        getitem_1 += 5;  iadd: "f32[2]" = getitem_1
        getitem[slice(1, 3, None)] = iadd;  setitem = getitem
        w: "f32[4]" = getitem * 1.0
)FX";
  auto g = importWb(body + "        return (w, iadd)\n");
  ASSERT_TRUE(g.ok()) << g.error().str();
  auto out = wbOutputs(*g);
  EXPECT_EQ(out[0], (std::vector<double>{0, 6, 7, 3}));
  EXPECT_EQ(out[1], (std::vector<double>{6, 7}));
  auto twin = importWb(body + "        return (w, c)\n", "bad.py");
  ASSERT_FALSE(twin.ok());
  EXPECT_EQ(twin.error().id, "fx-unsupported");
  EXPECT_EQ(twin.error().str(),
            "bad.py:13: node 'iadd' mutates 'getitem_1' in place while 'c', which may share its storage (a view of "
            "it, or the value it views), is still read: mutation through views is not supported");
}

// Where another alias than the written-back base and view would show the
// mutation, the import would compute a different value than torch: each
// is refused with the view error, naming the node and the alias.
TEST(FxViewWriteBack, MutationsNotWrittenBackAreRefused) {
  struct Case {
    const char* body;
    const char* message;
    int line;
  };
  const std::string clone = "        c: \"f32[3, 4]\" = x.clone()\n";
  const char* viewRead = "which may share its storage (a view of it, or the value it views), is still read: mutation "
                         "through views is not supported";
  const Case cases[] = {
      // written back into another region: torch's c[0] changed too
      {"        getitem: \"f32[4]\" = c[0]\n        getitem += v;  iadd: \"f32[4]\" = getitem\n"
       "        c[1] = iadd;  setitem = c\n        return (setitem,)\n",
       "node 'iadd' mutates 'getitem' in place while 'c', ", 12},
      // the same index spelled differently (not proven the same region)
      {"        getitem: \"f32[4]\" = c[0]\n        getitem += v;  iadd: \"f32[4]\" = getitem\n"
       "        c[-3] = iadd;  setitem = c\n        return (setitem,)\n",
       "node 'iadd' mutates 'getitem' in place while 'c', ", 12},
      // the base read before the write-back
      {"        getitem: \"f32[4]\" = c[0]\n        getitem += v;  iadd: \"f32[4]\" = getitem\n"
       "        s: \"f32[]\" = c.sum()\n        c[0] = iadd;  setitem = c\n        return (setitem, s)\n",
       "node 'iadd' mutates 'getitem' in place while 'c', ", 12},
      // never written back
      {"        getitem: \"f32[4]\" = c[0]\n        getitem += v;  iadd: \"f32[4]\" = getitem\n"
       "        return (iadd, c)\n",
       "node 'iadd' mutates 'getitem' in place while 'c', ", 12},
      // another view of the base, read after the write-back
      {"        other: \"f32[2, 4]\" = c[0:2]\n        getitem: \"f32[4]\" = c[0]\n"
       "        getitem += v;  iadd: \"f32[4]\" = getitem\n        c[0] = iadd;  setitem = c\n"
       "        o: \"f32[2, 4]\" = other * 1.0\n        return (setitem, o)\n",
       "node 'iadd' mutates 'getitem' in place while 'other', ", 13},
      // a second view of the same region, read after
      {"        g2: \"f32[4]\" = c[0]\n        getitem: \"f32[4]\" = c[0]\n"
       "        getitem += v;  iadd: \"f32[4]\" = getitem\n        c[0] = iadd;  setitem = c\n"
       "        return (setitem, g2)\n",
       "node 'iadd' mutates 'getitem' in place while 'g2', ", 13},
      // the region overwritten with another value while the view is read after
      {"        getitem: \"f32[4]\" = c[0]\n        getitem += v;  iadd: \"f32[4]\" = getitem\n"
       "        c[0] = y;  setitem = c\n        return (setitem, iadd)\n",
       "node 'setitem' mutates 'c' in place while 'iadd', ", 13},
      // the base written with itself
      {"        getitem: \"f32[4]\" = c[0]\n        getitem += v;  iadd: \"f32[4]\" = getitem\n"
       "        c[0] = c;  setitem = c\n        return (setitem,)\n",
       "node 'iadd' mutates 'getitem' in place while 'c', ", 12},
  };
  for (const auto& c : cases) {
    auto g = importWb(clone + c.body, "bad.py");
    ASSERT_FALSE(g.ok()) << c.body;
    EXPECT_EQ(g.error().id, "fx-unsupported") << c.body << g.error().str();
    EXPECT_EQ(g.error().message, std::string(c.message) + viewRead) << c.body;
    EXPECT_EQ(g.error().location, "bad.py:" + std::to_string(c.line)) << c.body << g.error().str();
  }
  // a graph input is never mutated, written back or not
  auto in = importWb("        getitem: \"f32[4]\" = x[0]\n        getitem += v;  iadd: \"f32[4]\" = getitem\n"
                     "        x[0] = iadd;  setitem = x\n        return (setitem,)\n",
                     "bad.py");
  ASSERT_FALSE(in.ok());
  EXPECT_EQ(in.error().id, "fx-unsupported");
  EXPECT_NE(in.error().message.find("node 'iadd' mutates 'getitem' in place, which is (a view of) a graph input"),
            std::string::npos)
      << in.error().str();
  // a boolean mask selects a data-dependent count, but the three
  // statements are where(m, c + 1.0, c) (FxMaskedUpdate.* in
  // fx_inplace_mask_test.cpp); the copy read after the write-back is the
  // getitem's data-dependent size, refused first
  auto mask = importWb(clone + "        getitem: \"f32[u0, 4]\" = c[m]\n        getitem += 1.0;  iadd = getitem\n"
                               "        c[m] = iadd;  setitem = c\n        return (setitem,)\n",
                       "ok.py");
  ASSERT_TRUE(mask.ok()) << mask.error().str();
  mask = importWb(clone + "        getitem: \"f32[u0, 4]\" = c[m]\n        getitem += 1.0;  iadd = getitem\n"
                          "        c[m] = iadd;  setitem = c\n        return (setitem, iadd)\n",
                  "bad.py");
  ASSERT_FALSE(mask.ok());
  EXPECT_EQ(mask.error().id, "fx-data-dependent") << mask.error().str();
  EXPECT_EQ(mask.error().location, "bad.py:11");
}

// tests/fixtures/capture_dynamo_setitem/cls_tp2 (its README): a TP 2 MLP
// whose output gets a bias at the first token in place after the all_reduce
// (`y[:, 0] += self.cls_bias`), run on the CPU executor against the
// sequential graph on sharded inputs: equal. The twin adds the bias to each
// rank's partial sums before the all_reduce: at token 0 the result is off by
// the bias counted once more (times the final 2.0), elsewhere exact.
// (`shardproof verify --infer-relations` verifies the pair and refutes the
// twin: DynamoCapture.ViewWrittenBackVerifiesAndItsTwinIsRefuted.)
TEST(FxViewWriteBack, TensorParallelFixtureMatchesTheSequentialGraph) {
  const std::string dir = SP_SOURCE_DIR "/tests/fixtures/capture_dynamo_setitem/";
  auto seq = importFxGraph(dir + "cls_tp2/seq.py");
  ASSERT_TRUE(seq.ok()) << seq.error().str();
  using fx_test::noise;
  using fx_test::typed;
  const std::vector<double> bias = noise(16, 34);
  ir::TensorMap in{{"L_x_", typed(ir::DType::F32, {2, 4, 16}, noise(128, 31))},
                   {"L_self_modules_fc1_parameters_weight_", typed(ir::DType::F32, {32, 16}, noise(512, 32))},
                   {"L_self_modules_fc2_parameters_weight_", typed(ir::DType::F32, {16, 32}, noise(512, 33))},
                   {"L_self_parameters_cls_bias_", typed(ir::DType::F32, {16}, bias)}};
  auto want = ir::runGraph(*seq, in);
  ASSERT_TRUE(want.ok()) << want.error().str();
  // rank r: rows r*16.. of fc1's weight, columns r*16.. of fc2's
  std::vector<ir::TensorMap> ranks = fx_test::mlpTp2Inputs(in);
  const std::vector<double> b = values(want->at("mul"));
  for (const char* c : {"cls_tp2", "cls_tp2_twin"}) {
    SCOPED_TRACE(c);
    auto got = fx_test::runTp2Capture(dir, c, "cls", ranks);
    ASSERT_TRUE(got.ok()) << got.error().str();
    for (size_t r = 0; r < 2; ++r) {
      auto a = values(got->at(r).at("mul"));
      ASSERT_EQ(a.size(), b.size());
      for (size_t k = 0; k < a.size(); ++k) {
        // [batch, token, hidden] = [2, 4, 16]: token 0 is k % 64 < 16
        const double extra = std::string(c) == "cls_tp2_twin" && k % 64 < 16 ? 2.0 * bias[k % 16] : 0.0;
        EXPECT_NEAR(a[k], b[k] + extra, 1e-5) << k;
      }
    }
  }
}

}  // namespace
}  // namespace sp::frontend

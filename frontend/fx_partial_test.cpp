// Partial import of captures with data-dependent sizes (FxOptions::partial,
// docs/fx-import.md "Data-dependent sizes"): which outputs are dropped and
// why, what survives (and computes what the capture computes), and what
// stays an error.
#include <gtest/gtest.h>

#include "frontend/fx_import.h"
#include "frontend/fx_test_util.h"
#include "ir/interpreter.h"

namespace sp::frontend {
namespace {

using fx_test::dynamoHeader;
using fx_test::typed;
using fx_test::values;
using ir::DType;

Result<ir::Graph> importPartial(const std::string& text, FxPartial& p, const std::string& name = "p.py") {
  FxOptions o;
  o.partial = &p;
  return importFxText(text, name, o);
}

std::vector<std::string> outputNames(const ir::Graph& g) {
  std::vector<std::string> out;
  for (ir::ValueId v : g.outputs()) out.push_back(g.value(v).name);
  return out;
}

// An ATen capture (AOTAutograd's form) with a dense output and nonzero's:
// the graph keeps relu, and nonzero is dropped naming the op, its node and
// line. Without FxOptions::partial the capture is the error it was.
const char* kAten = R"FX(class GraphModule(torch.nn.Module):
    def forward(self, arg0_1: "f32[8]"):
        relu: "f32[8]" = torch.ops.aten.relu.default(arg0_1)
        gt: "b8[8]" = torch.ops.aten.gt.Scalar(arg0_1, 0)
        nonzero: "i64[u0, 1]" = torch.ops.aten.nonzero.default(gt);  gt = None
        sym_size_int: "Sym(u0)" = torch.ops.aten.sym_size.int(nonzero, 0)
        ge: "Sym(u0 >= 0)" = sym_size_int >= 0
        _assert_scalar = torch.ops.aten._assert_scalar.default(ge, "Runtime assertion failed for expression u0 >= 0 on node 'ge'")
        view: "i64[u0]" = torch.ops.aten.view.default(nonzero, [sym_size_int]);  nonzero = None
        mul: "f32[8]" = torch.ops.aten.mul.Tensor(relu, 2.0)
        return (relu, view, mul)
)FX";

TEST(FxPartial, AtenNonzeroDropsItsOutputAndKeepsTheRest) {
  FxPartial p;
  auto g = importPartial(kAten, p);
  ASSERT_TRUE(g.ok()) << g.error().str();
  EXPECT_EQ(outputNames(*g), (std::vector<std::string>{"relu", "mul"}));
  ASSERT_EQ(p.outputs.size(), 1u);
  const FxDroppedOutput& d = p.outputs[0];
  EXPECT_EQ(d.capture, "p.py");
  EXPECT_EQ(d.name, "view");
  EXPECT_EQ(d.line, 11);
  EXPECT_EQ(d.op, "aten.nonzero.default");
  EXPECT_EQ(d.node, "nonzero");
  EXPECT_EQ(d.location, "p.py:5");
  EXPECT_EQ(d.reason.rfind("node 'nonzero' (aten.nonzero.default) has the data-dependent size u0", 0), 0u) << d.reason;
  EXPECT_EQ(d.str(), "output 'view' was left out: it depends on aten.nonzero.default (node 'nonzero') at p.py:5, whose result size "
                     "depends on tensor values");
  EXPECT_TRUE(p.collectives.empty());
  // what is left computes what the capture computes
  auto r = ir::runGraph(*g, {{"arg0_1", typed(DType::F32, {8}, {-1, 2, -3, 4, 0, 0.5, -0.5, 7})}});
  ASSERT_TRUE(r.ok()) << r.error().str();
  EXPECT_EQ(values(r->at("relu")), (std::vector<double>{0, 2, 0, 4, 0, 0.5, 0, 7}));
  EXPECT_EQ(values(r->at("mul")), (std::vector<double>{0, 4, 0, 8, 0, 1, 0, 14}));

  auto whole = importFxText(kAten, "p.py");
  ASSERT_FALSE(whole.ok());
  EXPECT_EQ(whole.error().id, "fx-data-dependent");
  EXPECT_EQ(whole.error().location, "p.py:5");
}

// Every output depends on a data-dependent size: the first such node's
// error, partial or not.
TEST(FxPartial, NoOutputLeftIsTheFirstNodesError) {
  std::string text = dynamoHeader(std::vector<std::pair<std::string, std::string>>{{"x", "f32[6]"}}) + R"FX(
        gt: "b8[6]" = x > 0
        nz: "i64[u0, 1]" = torch.nonzero(gt)
        where = torch.where(gt)
        rows: "i64[u1]" = where[0];  where = None
        picked: "f32[u1]" = x[rows]
        return (nz, picked)
)FX";
  FxPartial p;
  auto g = importPartial(text, p);
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.error().id, "fx-data-dependent");
  EXPECT_EQ(g.error().location, "p.py:6");
  EXPECT_NE(g.error().message.find("torch-level call torch.nonzero (node 'nz')"), std::string::npos)
      << g.error().str();
  auto whole = importFxText(text, "p.py");
  ASSERT_FALSE(whole.ok());
  EXPECT_EQ(whole.error().str(), g.error().str());
}

// Each torch-level data-dependent form is a cause, named as the capture
// calls it; an output reading two causes names the earlier one.
TEST(FxPartial, TorchLevelFormsAndTheEarliestCause) {
  std::string text = dynamoHeader(std::vector<std::pair<std::string, std::string>>{{"x", "f32[4, 3]"},
                                                                                   {"m", "b8[4]"}}) + R"FX(
        dense: "f32[4, 3]" = x * 2.0
        picked: "f32[u0, 3]" = x[m]
        nz: "i64[u1, 1]" = m.nonzero()
        where = torch.where(m)
        rows: "i64[u2]" = where[0];  where = None
        both: "f32[u0, 3]" = picked * 3.0
        sel: "f32[u2, 3]" = x[rows]
        cat: "f32[u3, 3]" = torch.cat([sel, picked])
        return (dense, both, nz, sel, cat)
)FX";
  FxPartial p;
  auto g = importPartial(text, p);
  ASSERT_TRUE(g.ok()) << g.error().str();
  EXPECT_EQ(outputNames(*g), (std::vector<std::string>{"dense"}));
  ASSERT_EQ(p.outputs.size(), 4u);
  struct Want {
    const char *name, *op, *node;
    int line;
  };
  const Want want[] = {{"both", "operator.getitem", "picked", 7},
                       {"nz", "Tensor.nonzero", "nz", 8},
                       {"sel", "torch.where", "where", 9},
                       {"cat", "operator.getitem", "picked", 7}};  // sel's cause is later than picked's
  for (size_t k = 0; k < 4; ++k) {
    SCOPED_TRACE(want[k].name);
    EXPECT_EQ(p.outputs[k].name, want[k].name);
    EXPECT_EQ(p.outputs[k].op, want[k].op);
    EXPECT_EQ(p.outputs[k].node, want[k].node);
    EXPECT_EQ(p.outputs[k].location, "p.py:" + std::to_string(want[k].line));
    EXPECT_EQ(p.outputs[k].line, 14);
  }
  EXPECT_NE(p.outputs[0].reason.find("the boolean mask index 'm'"), std::string::npos) << p.outputs[0].reason;
}

// A statement left out that mutates a tensor in place (Mixtral's
// `final_hidden_states.index_add_(0, top_x, ...)`) leaves that tensor out
// from there on, with every name that shares its storage (an alias, a view
// taken before): they must not keep the value from before the mutation.
// What never saw the mutation (read before it) survives.
TEST(FxPartial, InPlaceMutationByADroppedStatementDropsTheTensor) {
  std::string text = dynamoHeader(std::vector<std::pair<std::string, std::string>>{{"x", "f32[4, 2]"},
                                                                                   {"m", "b8[4]"}}) + R"FX(
        acc: "f32[4, 2]" = torch.zeros((4, 2), dtype = torch.float32)
        same = acc
        flat: "f32[8]" = acc.view(8)
        before: "f32[4, 2]" = acc + x
        where = torch.where(m)
        rows: "i64[u0]" = where[0];  where = None
        picked: "f32[u0, 2]" = x[rows]
        index_add_: "f32[4, 2]" = acc.index_add_(0, rows, picked);  index_add_ = None
        after: "f32[4, 2]" = x + 1.0
        return (acc, same, flat, before, after)
)FX";
  FxPartial p;
  auto g = importPartial(text, p);
  ASSERT_TRUE(g.ok()) << g.error().str();
  EXPECT_EQ(outputNames(*g), (std::vector<std::string>{"before", "after"}));
  ASSERT_EQ(p.outputs.size(), 3u);
  for (size_t k = 0; k < 3; ++k) {
    EXPECT_EQ(p.outputs[k].op, "torch.where");
    EXPECT_EQ(p.outputs[k].location, "p.py:10");
  }
  EXPECT_EQ(p.outputs[0].name, "acc");
  EXPECT_EQ(p.outputs[1].name, "same");
  EXPECT_EQ(p.outputs[2].name, "flat");
  auto r = ir::runGraph(*g, {{"L_x_", typed(DType::F32, {4, 2}, {1, 2, 3, 4, 5, 6, 7, 8})},
                             {"L_m_", typed(DType::Bool, {4}, {1, 0, 1, 0})}});
  ASSERT_TRUE(r.ok()) << r.error().str();
  EXPECT_EQ(values(r->at("before")), (std::vector<double>{1, 2, 3, 4, 5, 6, 7, 8}));
}

// The same for an ATen in-place op (`fill_` of a buffer with a
// data-dependent count): the buffer is left out from there on.
TEST(FxPartial, AtenInPlaceOpLeftOutDropsItsFirstArgument) {
  std::string text = R"FX(class GraphModule(torch.nn.Module):
    def forward(self, arg0_1: "f32[4]"):
        gt: "b8[4]" = torch.ops.aten.gt.Scalar(arg0_1, 0)
        nonzero: "i64[u0, 1]" = torch.ops.aten.nonzero.default(gt);  gt = None
        sym_size_int: "Sym(u0)" = torch.ops.aten.sym_size.int(nonzero, 0);  nonzero = None
        zeros: "f32[4]" = torch.ops.aten.zeros.default([4], dtype = torch.float32, device = device(type='cpu'), pin_memory = False)
        fill_: "f32[4]" = torch.ops.aten.fill_.Scalar(zeros, sym_size_int);  fill_ = None
        mul: "f32[4]" = torch.ops.aten.mul.Tensor(zeros, 2.0);  zeros = None
        relu: "f32[4]" = torch.ops.aten.relu.default(arg0_1)
        return (mul, relu)
)FX";
  FxPartial p;
  auto g = importPartial(text, p);
  ASSERT_TRUE(g.ok()) << g.error().str();
  EXPECT_EQ(outputNames(*g), (std::vector<std::string>{"relu"}));
  ASSERT_EQ(p.outputs.size(), 1u);
  EXPECT_EQ(p.outputs[0].name, "mul");
  EXPECT_EQ(p.outputs[0].node, "nonzero");
}

// A statement left out that mutates a graph input in place is still the
// import's error: the caller would see the new value.
TEST(FxPartial, DroppedMutationOfAGraphInputIsAnError) {
  std::string text = dynamoHeader(std::vector<std::pair<std::string, std::string>>{{"x", "f32[4]"},
                                                                                   {"m", "b8[4]"}}) + R"FX(
        y: "f32[4]" = x * 2.0
        nonzero: "i64[u0, 1]" = m.nonzero()
        nz: "i64[u0]" = nonzero.squeeze(1)
        index_add_: "f32[4]" = x.index_add_(0, nz, y);  index_add_ = None
        return (y,)
)FX";
  FxPartial p;
  auto g = importPartial(text, p);
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.error().id, "fx-unsupported");
  EXPECT_EQ(g.error().location, "p.py:9");
  EXPECT_NE(g.error().message.find("which is (a view of) a graph input"), std::string::npos) << g.error().str();
}

// A collective among the statements left out is recorded (nothing checks
// it across ranks); wait_tensor is not one.
TEST(FxPartial, DroppedCollectivesAreRecorded) {
  std::string text = dynamoHeader(std::vector<std::pair<std::string, std::string>>{{"x", "f32[4, 2]"}}) + R"FX(
        s: "f32[4]" = x.sum(-1)
        gt: "b8[4]" = s > 0
        where = torch.where(gt)
        rows: "i64[u0]" = where[0];  where = None
        picked: "f32[u0, 2]" = x[rows]
        all_gather_into_tensor: "f32[2*u0, 2]" = torch.ops._c10d_functional.all_gather_into_tensor(picked, 2, '0')
        wait_tensor: "f32[2*u0, 2]" = torch.ops._c10d_functional.wait_tensor(all_gather_into_tensor)
        all_reduce: "f32[4, 2]" = torch.ops._c10d_functional.all_reduce(x, 'sum', '0')
        wait_tensor_1: "f32[4, 2]" = torch.ops._c10d_functional.wait_tensor(all_reduce)
        return (wait_tensor, wait_tensor_1)
)FX";
  FxPartial p;
  FxOptions o;
  o.partial = &p;
  o.worldSize = 2;
  auto g = importFxText(text, "c.py", o);
  ASSERT_TRUE(g.ok()) << g.error().str();
  EXPECT_EQ(outputNames(*g), (std::vector<std::string>{"wait_tensor_1"}));
  ASSERT_EQ(p.collectives.size(), 1u);
  EXPECT_EQ(p.collectives[0], "_c10d_functional.all_gather_into_tensor (node 'all_gather_into_tensor') at c.py:10");
}

// A name a later statement binds again, from values the import kept, is
// kept from there on (FX reuses names only through in-place rebinding, but
// the import does not rely on it).
TEST(FxPartial, StatementsAfterTheDataDependentPartStillImport) {
  std::string text = dynamoHeader(std::vector<std::pair<std::string, std::string>>{{"x", "f32[3]"}}) + R"FX(
        gt: "b8[3]" = x > 0
        picked: "f32[u0]" = x[gt]
        n: "f32[]" = picked.sum()
        y: "f32[3]" = torch.exp(x)
        y_1: "f32[3]" = y * x
        return (n, y_1)
)FX";
  FxPartial p;
  auto g = importPartial(text, p);
  ASSERT_TRUE(g.ok()) << g.error().str();
  EXPECT_EQ(outputNames(*g), (std::vector<std::string>{"y_1"}));
  ASSERT_EQ(p.outputs.size(), 1u);
  EXPECT_EQ(p.outputs[0].name, "n");
  EXPECT_EQ(p.outputs[0].op, "operator.getitem");
}

}  // namespace
}  // namespace sp::frontend

// The interpreter's memory and time bounds: elementwise kernels write into
// the storage of an input that dies at them (same results, live values
// untouched), and RunOptions::deadline stops a run, between nodes and
// inside long kernels.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>

#include "ir/interp_test_util.h"
#include "ir/interpreter.h"
#include "ir/kernel_util.h"
#include "ir/text.h"

namespace sp::ir {
namespace {

using test::f32;
using test::vals;

// Every in-place kernel along chains over x, with values that stay live
// while their storage could be reused if only refcounts of values were
// looked at: x (the caller keeps a copy), v (a view of c, kept), e used
// twice by one node.
Graph chains() {
  return test::parsed(R"(graph chains {
  input %x: f32[2, 3]
  input %r: f32[2, 3]
  input %m: bool[2, 3]
  input %k: f32[2, 3]
  %a: f32[2, 3] = exp(%x)
  %b: f32[2, 3] = neg(%x)
  %c: f32[2, 3] = sub(%b, %a)
  %v: f32[6] = reshape(%c) {shape = [6]}
  %e: f32[2, 3] = relu(%c)
  %d: f32[2, 3] = mul(%e, %e)
  %w: f32[2, 3] = where(%m, %d, %k)
  %s: f32[2, 3] = softmax(%w) {axis = 1}
  %n: f32[2, 3] = layer_norm(%s) {axis = 1}
  %y: f32[2, 3], %ym: bool[2, 3] = dropout(%n, %r) {ratio = 0.5}
  %v6: f32[2, 3] = reshape(%v) {shape = [2, 3]}
  %z: f32[2, 3] = sub(%y, %v6)
  output %v
  output %z
})", "chains.sp");
}

TensorMap chainInputs() {
  Tensor m(DType::Bool, {2, 3});
  for (int64_t i = 0; i < 6; ++i) m.setFromDouble(i, i % 2);
  return {{"x", f32({2, 3}, {-1, 2, -3, 0.5f, -0.25f, 1})},
          {"r", f32({2, 3}, {0.9f, 0.1f, 0.7f, 0.2f, 0.6f, 0.8f})},
          {"m", m},
          {"k", f32({2, 3}, {-7, -7, -7, -7, -7, -7})}};
}

TEST(InterpInPlace, SameResultsAsAFullRunAndLiveValuesIntact) {
  Graph g = chains();
  if (g.nodes().empty()) return;
  TensorMap in = chainInputs();
  Tensor x = in.at("x");
  // runGraphAll frees nothing, so nothing is reused: the reference.
  auto all = runGraphAll(g, in);
  ASSERT_TRUE(all.ok()) << all.error().str();
  ValueId v = *g.findValue("v"), z = *g.findValue("z"), c = *g.findValue("c");
  // c has negative elements: relu in place over c would change the view v.
  std::vector<double> cv = vals((*all)[size_t(c)]);
  EXPECT_LT(*std::min_element(cv.begin(), cv.end()), 0);
  auto kept = runGraphKeep(g, in, {v, z});
  ASSERT_TRUE(kept.ok()) << kept.error().str();
  EXPECT_TRUE((*kept)[size_t(v)].identical((*all)[size_t(v)])) << "the kept view of c was overwritten";
  EXPECT_TRUE((*kept)[size_t(z)].identical((*all)[size_t(z)]));
  EXPECT_EQ(vals(x), (std::vector<double>{-1, 2, -3, 0.5, -0.25, 1})) << "the caller's input was overwritten";
  // Inputs moved in (nothing else holds them) may be reused: same results.
  auto moved = runGraphKeep(g, chainInputs(), {v, z});
  ASSERT_TRUE(moved.ok()) << moved.error().str();
  EXPECT_TRUE((*moved)[size_t(z)].identical((*all)[size_t(z)]));
  auto outs = runGraph(g, chainInputs());
  ASSERT_TRUE(outs.ok()) << outs.error().str();
  EXPECT_TRUE(outs->at("z").identical((*all)[size_t(z)]));
}

// The kernels reuse a donated input only when it is the last reference.
TEST(InterpInPlace, DonatedInputIsReusedOnlyWhenUnshared) {
  // One input, moved in: an initializer list would copy it.
  auto runExp = [](Tensor x, uint64_t donated) {
    std::vector<Tensor> in;
    in.push_back(std::move(x));
    KernelContext ctx;
    ctx.donated = donated;
    KernelContextScope scope(&ctx);
    auto out = evalOp(OpKind::Exp, {}, in);
    EXPECT_TRUE(out.ok());
    return out.ok() ? (*out)[0] : Tensor();
  };
  Tensor x = f32({3}, {0, 1, 2});
  const std::byte* storage = x.raw();
  Tensor kept = x;  // a second reference: not reused
  Tensor y = runExp(std::move(x), 1);
  EXPECT_NE(y.raw(), storage);
  EXPECT_EQ(vals(kept), (std::vector<double>{0, 1, 2}));
  Tensor sole = f32({3}, {0, 1, 2});
  storage = sole.raw();
  EXPECT_NE(runExp(std::move(sole), 0).raw(), storage);  // the last reference, not donated
  storage = kept.raw();
  Tensor z = runExp(std::move(kept), 1);  // the last reference, donated: in place
  EXPECT_EQ(z.raw(), storage);
  EXPECT_TRUE(z.identical(y));
}

TEST(InterpDeadline, PassedDeadlineStopsAGraphBeforeItsFirstOp) {
  Graph g = chains();
  if (g.nodes().empty()) return;
  RunOptions opts;
  opts.deadline = std::chrono::steady_clock::now() - std::chrono::seconds(1);
  auto out = runGraphKeep(g, chainInputs(), {*g.findValue("z")}, opts);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.error().id, "time-limit");
  EXPECT_EQ(out.error().message, "interpreted up to exp 'a' (chains.sp:6:3), 0 of 12 ops done");
}

TEST(InterpDeadline, PassedDeadlineStopsAProgramNamingTheRank) {
  auto p = test::localAndReduced();
  ASSERT_TRUE(p.ok()) << p.error().str();
  RunOptions opts;
  opts.deadline = std::chrono::steady_clock::now() - std::chrono::seconds(1);
  auto out = runProgramKeep(*p, {}, {{*p->rank(0).findValue("t")}, {*p->rank(1).findValue("t")}}, opts);
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.error().id, "time-limit");
  EXPECT_EQ(out.error().message, "interpreted up to rank 0 all_reduce 's' (p.sp:7:5), 0 of 4 ops of all ranks done");
}

// Inside a kernel: parallelFor stops between rounds once the deadline has
// passed and marks the kernel interrupted (its output is then discarded).
TEST(InterpDeadline, ParallelForStopsBetweenRounds) {
  int64_t perThread = 1, n = int64_t(1) << 20;
  std::atomic<int64_t> covered{0};
  auto body = [&](int64_t b, int64_t e) { covered += e - b; };
  parallelFor(n, body, perThread);  // no context: everything
  EXPECT_EQ(covered, n);
  KernelContext ctx;
  ctx.deadline = std::chrono::steady_clock::now() - std::chrono::seconds(1);
  KernelContextScope scope(&ctx);
  covered = 0;
  parallelFor(n, body, perThread);
  EXPECT_GT(covered, 0);  // the first round runs
  EXPECT_LT(covered, n);
  EXPECT_TRUE(ctx.interrupted);
}

// The serial index kernels (arg max, top-k, one-hot, scatter, trilu, range,
// gathers) poll the deadline too: past it, each stops early and marks the
// kernel interrupted; with time left, each finishes without the mark.
TEST(InterpDeadline, SerialIndexKernelsPollTheDeadline) {
  const int64_t rows = 512, cols = 256, n = rows * cols;
  Tensor x(DType::F32, {rows, cols});
  for (int64_t i = 0; i < n; ++i) x.setFromDouble(i, double((i * 7919) % 1000));
  Tensor flat(DType::F32, {n}), idx(DType::I64, {n});
  for (int64_t i = 0; i < n; ++i) {
    flat.setFromDouble(i, double(i));
    idx.setFromDouble(i, double((i * 31) % n));
  }
  struct Case {
    const char* name;
    OpKind op;
    AttrMap attrs;
    std::vector<Tensor> in;
  };
  std::vector<Case> cases = {
      {"argmax", OpKind::ArgMax, {{"axis", int64_t(1)}}, {x}},
      {"topk", OpKind::TopK, {{"k", int64_t(4)}}, {x}},
      {"one_hot", OpKind::OneHot, {{"depth", int64_t(4)}, {"off", 0.5}}, {idx}},
      {"scatter_elements", OpKind::ScatterElements, {}, {flat, idx, flat}},
      {"trilu", OpKind::Trilu, {}, {x}},
      {"range", OpKind::Range, {{"start", 0.0}, {"limit", double(n)}}, {}},
      {"gather", OpKind::Gather, {}, {flat, idx}},
      {"gather_elements", OpKind::GatherElements, {}, {flat, idx}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    KernelContext late, early;
    late.deadline = std::chrono::steady_clock::now() - std::chrono::seconds(1);
    early.deadline = std::chrono::steady_clock::now() + std::chrono::hours(1);
    {
      KernelContextScope scope(&early);
      auto out = evalOp(c.op, c.attrs, c.in);
      ASSERT_TRUE(out.ok()) << out.error().str();
      EXPECT_FALSE(early.interrupted);
    }
    KernelContextScope scope(&late);
    (void)evalOp(c.op, c.attrs, c.in);
    EXPECT_TRUE(late.interrupted);
  }
}

}  // namespace
}  // namespace sp::ir

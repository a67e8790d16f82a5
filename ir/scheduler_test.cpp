// Distributed programs under the rank scheduler: collective semantics,
// a tensor-parallel MLP against its sequential graph, and every scheduling
// error (deadlock, mismatched collectives, shapes, attributes, recv types).
#include <gtest/gtest.h>

#include <cmath>

#include <fstream>
#include <random>
#include <sstream>

#include "ir/collective_order.h"
#include "ir/collectives.h"
#include "ir/interp_test_util.h"
#include "ir/interpreter.h"
#include "ir/text.h"

namespace sp::ir {
namespace {

using test::f32;
using test::vals;

AttrMap grp(const std::string& g, AttrMap more = {}) {
  more["group"] = g;
  return more;
}

// One rank: input x of `type`, one node `op` reading x (unless it is a recv),
// output y. Built inside the program so collectives know their group sizes.
GraphBuilder oneOp(OpKind op, TensorType type, AttrMap attrs, const std::string& node = "c",
                   SourceLoc loc = {}) {
  GraphBuilder gb("rank");
  EXPECT_TRUE(gb.addInput("x", type).ok());
  std::vector<std::string> in = op == OpKind::Recv ? std::vector<std::string>{} : std::vector<std::string>{"x"};
  EXPECT_TRUE(gb.addNode(op, in, {"y"}, std::move(attrs), std::move(loc), node).ok());
  EXPECT_TRUE(gb.addOutput("y").ok());
  return gb;
}

Program build(ProgramBuilder pb) {
  auto p = std::move(pb).finish();
  EXPECT_TRUE(p.ok()) << (p.ok() ? "" : p.error().str());
  return p.ok() ? std::move(*p) : Program();
}

// World of `n` ranks on one axis "tp", each running oneOp(op) on its own x.
Program sameOp(int64_t n, OpKind op, TensorType type, AttrMap attrs) {
  ProgramBuilder pb(n, Mesh{{{"tp", n}}});
  for (int64_t r = 0; r < n; ++r) EXPECT_TRUE(pb.setRank(r, oneOp(op, type, attrs)).ok());
  return build(std::move(pb));
}

std::vector<TensorMap> xs(std::vector<Tensor> ts) {
  std::vector<TensorMap> out;
  for (auto& t : ts) out.push_back({{"x", t}});
  return out;
}

std::vector<double> yOf(const Result<std::vector<TensorMap>>& r, size_t rank) {
  EXPECT_TRUE(r.ok()) << (r.ok() ? "" : r.error().str());
  return r.ok() ? vals(r->at(rank).at("y")) : std::vector<double>{};
}

TEST(InterpCollective, AllReduceSumAvgMaxMin) {
  TensorType t{DType::F32, {2}};
  auto in = xs({f32({2}, {1, -5}), f32({2}, {2, 7}), f32({2}, {4, 1})});
  auto sum = runProgram(sameOp(3, OpKind::AllReduce, t, grp("tp")), in);
  for (size_t r = 0; r < 3; ++r) EXPECT_EQ(yOf(sum, r), (std::vector<double>{7, 3}));
  EXPECT_EQ(yOf(runProgram(sameOp(3, OpKind::AllReduce, t, grp("tp", {{"reduce", std::string("avg")}})), in), 1),
            (std::vector<double>{7.0f / 3, 1}));
  EXPECT_EQ(yOf(runProgram(sameOp(3, OpKind::AllReduce, t, grp("tp", {{"reduce", std::string("max")}})), in), 2),
            (std::vector<double>{4, 7}));
  EXPECT_EQ(yOf(runProgram(sameOp(3, OpKind::AllReduce, t, grp("tp", {{"reduce", std::string("min")}})), in), 0),
            (std::vector<double>{1, -5}));
}

TEST(InterpCollective, AllReduceSumsInMemberOrder) {
  // (1e8 + 1) - 1e8 in f32 is 0 but 1e8 + (1 - 1e8) is 8: order is visible.
  ProgramBuilder pb(3, Mesh{{{"w", 3}}});
  ASSERT_TRUE(pb.addGroup("rev", {{2, 1, 0}}).ok());
  for (int64_t r = 0; r < 3; ++r)
    ASSERT_TRUE(pb.setRank(r, oneOp(OpKind::AllReduce, {DType::F32, {1}}, grp("rev"))).ok());
  Program p = build(std::move(pb));
  auto in = xs({f32({1}, {-1e8f}), f32({1}, {1}), f32({1}, {1e8f})});
  // member order 2, 1, 0: (1e8 + 1) + -1e8 = 0 in f32.
  EXPECT_EQ(yOf(runProgram(p, in), 0), (std::vector<double>{0}));
}

TEST(InterpCollective, AllGatherConcatsInGroupOrder) {
  ProgramBuilder pb(3, Mesh{{{"w", 3}}});
  ASSERT_TRUE(pb.addGroup("g", {{2, 0, 1}}).ok());
  for (int64_t r = 0; r < 3; ++r)
    ASSERT_TRUE(pb.setRank(r, oneOp(OpKind::AllGather, {DType::F32, {1, 2}},
                                    grp("g", {{"dim", int64_t(-1)}})))
                    .ok());
  Program p = build(std::move(pb));
  auto out = runProgram(p, xs({f32({1, 2}, {0, 0.5}), f32({1, 2}, {1, 1.5}), f32({1, 2}, {2, 2.5})}));
  for (size_t r = 0; r < 3; ++r) EXPECT_EQ(yOf(out, r), (std::vector<double>{2, 2.5, 0, 0.5, 1, 1.5}));
  EXPECT_EQ(out->at(1).at("y").dims(), (std::vector<int64_t>{1, 6}));
}

TEST(InterpCollective, ReduceScatterGivesChunkI) {
  Program p = sameOp(2, OpKind::ReduceScatter, {DType::F32, {4, 1}}, grp("tp", {{"dim", int64_t(0)}}));
  auto out = runProgram(p, xs({f32({4, 1}, {1, 2, 3, 4}), f32({4, 1}, {10, 20, 30, 40})}));
  EXPECT_EQ(yOf(out, 0), (std::vector<double>{11, 22}));
  EXPECT_EQ(yOf(out, 1), (std::vector<double>{33, 44}));
}

TEST(InterpCollective, AllToAllExchangesChunks) {
  // Member i splits rows into 2 chunks; member j gets chunk j of everyone,
  // concatenated along columns in member order.
  Program p = sameOp(2, OpKind::AllToAll, {DType::F32, {2, 1}},
                     grp("tp", {{"split_dim", int64_t(0)}, {"concat_dim", int64_t(1)}}));
  auto out = runProgram(p, xs({f32({2, 1}, {1, 2}), f32({2, 1}, {3, 4})}));
  EXPECT_EQ(yOf(out, 0), (std::vector<double>{1, 3}));
  EXPECT_EQ(yOf(out, 1), (std::vector<double>{2, 4}));
  EXPECT_EQ(out->at(0).at("y").dims(), (std::vector<int64_t>{1, 2}));
}

TEST(InterpCollective, BroadcastFromRootIndex) {
  ProgramBuilder pb(3, Mesh{{{"w", 3}}});
  ASSERT_TRUE(pb.addGroup("g", {{2, 0, 1}}).ok());
  for (int64_t r = 0; r < 3; ++r)
    ASSERT_TRUE(pb.setRank(r, oneOp(OpKind::Broadcast, {DType::I32, {1}}, grp("g", {{"root", int64_t(1)}}))).ok());
  std::vector<TensorMap> in;
  for (int r = 0; r < 3; ++r) in.push_back({{"x", Tensor::scalar(DType::I32, 100 + r).reshaped({1})}});
  auto out = runProgram(build(std::move(pb)), in);
  for (size_t r = 0; r < 3; ++r) EXPECT_EQ(yOf(out, r), (std::vector<double>{100}));  // root 1 is rank 0
}

TEST(InterpCollective, GroupsOnDifferentAxesProgressIndependently) {
  // dp x tp = 2 x 2: all_reduce over tp, then over dp.
  ProgramBuilder pb(4, Mesh{{{"dp", 2}, {"tp", 2}}});
  for (int64_t r = 0; r < 4; ++r) {
    GraphBuilder gb("r");
    ASSERT_TRUE(gb.addInput("x", {DType::F32, {1}}).ok());
    ASSERT_TRUE(gb.addNode(OpKind::AllReduce, {"x"}, {"t"}, grp("tp")).ok());
    ASSERT_TRUE(gb.addNode(OpKind::AllReduce, {"t"}, {"d"}, grp("dp", {{"reduce", std::string("max")}})).ok());
    ASSERT_TRUE(gb.addOutput("t").ok());
    ASSERT_TRUE(gb.addOutput("d").ok());
    ASSERT_TRUE(pb.setRank(r, std::move(gb)).ok());
  }
  auto out = runProgram(build(std::move(pb)), xs({f32({1}, {1}), f32({1}, {2}), f32({1}, {30}), f32({1}, {40})}));
  ASSERT_TRUE(out.ok()) << out.error().str();
  EXPECT_EQ(vals(out->at(1).at("t")), (std::vector<double>{3}));
  EXPECT_EQ(vals(out->at(2).at("t")), (std::vector<double>{70}));
  for (size_t r = 0; r < 4; ++r) EXPECT_EQ(vals(out->at(r).at("d")), (std::vector<double>{70}));
}

TEST(InterpCollective, SendRecvFifoPerTag) {
  ProgramBuilder pb(2, Mesh{});
  GraphBuilder g0("r0");
  ASSERT_TRUE(g0.addInput("a", {DType::F32, {1}}).ok());
  ASSERT_TRUE(g0.addInput("b", {DType::F32, {1}}).ok());
  ASSERT_TRUE(g0.addNode(OpKind::Send, {"a"}, {}, {{"peer", int64_t(1)}}, {}, "s_a").ok());
  ASSERT_TRUE(g0.addNode(OpKind::Send, {"b"}, {}, {{"peer", int64_t(1)}}, {}, "s_b").ok());
  ASSERT_TRUE(pb.setRank(0, std::move(g0)).ok());
  GraphBuilder g1("r1");
  AttrMap rv{{"peer", int64_t(0)}, {"dtype", DType::F32}, {"shape", Shape{1}}};
  ASSERT_TRUE(g1.addNode(OpKind::Recv, {}, {"first"}, rv).ok());
  ASSERT_TRUE(g1.addNode(OpKind::Recv, {}, {"second"}, rv).ok());
  ASSERT_TRUE(g1.addOutput("first").ok());
  ASSERT_TRUE(g1.addOutput("second").ok());
  ASSERT_TRUE(pb.setRank(1, std::move(g1)).ok());
  auto out = runProgram(build(std::move(pb)), {{{"a", f32({1}, {5})}, {"b", f32({1}, {6})}}, {}});
  ASSERT_TRUE(out.ok()) << out.error().str();
  EXPECT_EQ(vals(out->at(1).at("first")), (std::vector<double>{5}));
  EXPECT_EQ(vals(out->at(1).at("second")), (std::vector<double>{6}));
}

// ---- a tensor-parallel MLP refines its sequential graph numerically ----

GraphBuilder mlp(const std::string& name, int64_t hidden, bool allReduce) {
  GraphBuilder gb(name);
  EXPECT_TRUE(gb.addInput("x", {DType::F32, {Dim::sym("tokens"), 8}}).ok());
  EXPECT_TRUE(gb.addParam("w1", {DType::F32, {8, hidden}}).ok());
  EXPECT_TRUE(gb.addParam("w2", {DType::F32, {hidden, 8}}).ok());
  EXPECT_TRUE(gb.addNode(OpKind::MatMul, {"x", "w1"}, {"h"}, {}).ok());
  EXPECT_TRUE(gb.addNode(OpKind::Gelu, {"h"}, {"a"}, {}).ok());
  EXPECT_TRUE(gb.addNode(OpKind::MatMul, {"a", "w2"}, {allReduce ? "partial" : "y"}, {}).ok());
  if (allReduce) {
    EXPECT_TRUE(gb.addNode(OpKind::AllReduce, {"partial"}, {"y"}, grp("tp")).ok());
  }
  EXPECT_TRUE(gb.addOutput("y").ok());
  return gb;
}

TEST(InterpProgram, TensorParallelMlpMatchesSequential) {
  Graph seq = test::finish(mlp("seq", 16, false));
  RunOptions opts;
  opts.seed = 3;
  opts.symbols["tokens"] = 5;
  auto full = prepareInputs(seq, {}, opts);
  ASSERT_TRUE(full.ok()) << full.error().str();
  auto ref = runGraph(seq, *full, opts);
  ASSERT_TRUE(ref.ok()) << ref.error().str();

  ProgramBuilder pb(2, Mesh{{{"tp", 2}}});
  for (int64_t r = 0; r < 2; ++r) ASSERT_TRUE(pb.setRank(r, mlp("tp", 8, true)).ok());
  Program p = build(std::move(pb));
  // Column-parallel w1 (columns 8r..8r+7), row-parallel w2 (rows 8r..8r+7).
  std::vector<TensorMap> given(2);
  for (int64_t r = 0; r < 2; ++r) {
    auto w1 = splitTensor(full->at("w1"), 1, 2);
    auto w2 = splitTensor(full->at("w2"), 0, 2);
    ASSERT_TRUE(w1.ok() && w2.ok());
    given[size_t(r)] = {{"x", full->at("x")}, {"w1", (*w1)[size_t(r)]}, {"w2", (*w2)[size_t(r)]}};
  }
  auto out = runProgram(p, given, opts);
  ASSERT_TRUE(out.ok()) << out.error().str();
  std::vector<double> want = vals(ref->at("y"));
  ASSERT_EQ(want.size(), 40u);
  for (size_t r = 0; r < 2; ++r) {
    std::vector<double> got = vals(out->at(r).at("y"));
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5) << "rank " << r << " i " << i;
  }
  // A wrong shard (w2 rows swapped between ranks) diverges.
  std::swap(given[0]["w2"], given[1]["w2"]);
  auto bad = runProgram(p, given, opts);
  ASSERT_TRUE(bad.ok());
  double diff = 0;
  std::vector<double> got = vals(bad->at(0).at("y"));
  for (size_t i = 0; i < want.size(); ++i) diff = std::max(diff, std::abs(got[i] - want[i]));
  EXPECT_GT(diff, 1e-3);
}

TEST(InterpProgram, DeterministicAcrossRunsAndSeeds) {
  ProgramBuilder pb(2, Mesh{{{"tp", 2}}});
  for (int64_t r = 0; r < 2; ++r) ASSERT_TRUE(pb.setRank(r, mlp("tp", 4, true)).ok());
  Program p = build(std::move(pb));
  RunOptions a;
  a.seed = 11;
  auto r1 = runProgramAll(p, {}, a), r2 = runProgramAll(p, {}, a);
  ASSERT_TRUE(r1.ok() && r2.ok()) << (r1.ok() ? "" : r1.error().str());
  for (size_t r = 0; r < 2; ++r)
    for (size_t v = 0; v < (*r1)[r].size(); ++v) EXPECT_TRUE((*r1)[r][v].identical((*r2)[r][v]));
  // Replicated inputs with the same name agree across ranks.
  EXPECT_TRUE((*r1)[0][0].identical((*r1)[1][0]));
  a.seed = 12;
  auto r3 = runProgram(p, {}, a);
  ASSERT_TRUE(r3.ok());
  EXPECT_FALSE(r3->at(0).at("y").identical((*r1)[0][size_t(*p.rank(0).findValue("y"))]));
}

// ---- errors ----

void expectError(const Program& p, const std::vector<TensorMap>& in, const std::string& id,
                 const std::string& msg) {
  auto r = runProgram(p, in);
  ASSERT_FALSE(r.ok()) << "expected " << id;
  EXPECT_EQ(r.error().id, id);
  EXPECT_EQ(r.error().message, msg);
}

TEST(InterpProgramErrors, Deadlock) {
  ProgramBuilder pb(3, Mesh{});
  for (int64_t r = 0; r < 2; ++r) {
    GraphBuilder gb("r");
    AttrMap rv{{"peer", int64_t(1 - r)}, {"dtype", DType::F32}, {"shape", Shape{1}}};
    EXPECT_TRUE(gb.addNode(OpKind::Recv, {}, {"y"}, rv, SourceLoc{"pp.py", 10 + int(r), 0, ""},
                           "r" + std::to_string(r)).ok());
    EXPECT_TRUE(gb.addNode(OpKind::Send, {"y"}, {}, {{"peer", int64_t(1 - r)}}, {}, "s").ok());
    ASSERT_TRUE(pb.setRank(r, std::move(gb)).ok());
  }
  ASSERT_TRUE(pb.setRank(2, oneOp(OpKind::Neg, {DType::F32, {1}}, {})).ok());
  expectError(build(std::move(pb)), {}, "deadlock",
              "deadlock: ranks 0 -> 1 -> 0 wait for each other in a cycle: rank 0 waits at recv 'r0' (pp.py:10) "
              "from rank 1 tag 0; rank 1 waits at "
              "recv 'r1' (pp.py:11) from rank 0 tag 0; rank 2 finished");
}

Program parseTrustProgram(const std::string& file) {
  std::ifstream in(std::string(SP_SOURCE_DIR) + "/tests/data/trust/" + file);
  std::stringstream ss;
  ss << in.rdbuf();
  auto p = parseProgram(ss.str(), file);
  EXPECT_TRUE(p.ok()) << (p.ok() ? "" : p.error().str());
  return p.ok() ? std::move(*p) : Program();
}

// Three two-rank groups whose broadcasts each pair up in the same order on
// both members, in a cycle: rank 0 waits in g01 for rank 1, rank 1 in g12
// for rank 2, rank 2 in g20 for rank 0. Matching per group (the k-th
// collective of a group on each member) pairs them all; the one global
// order finds that none can start.
// The order known without ordering (ir::uniformSpmd): one rank class, no
// send or recv, mesh-axis groups only; anything else is left to
// orderCollectives, which must agree where uniformSpmd holds.
TEST(CollectiveOrder, UniformSpmdOnlyWhereTheOrderIsEvident) {
  auto prog = [](const std::string& body, const std::string& header = "  mesh [dp = 2, tp = 2]\n") {
    auto p = parseProgram("program p {\n  world 4\n" + header + "  rank 0..3 {\n" + body + "  }\n}\n", "p.sp");
    EXPECT_TRUE(p.ok()) << (p.ok() ? "" : p.error().str());
    return std::move(*p);
  };
  const std::string mesh = "    input %x: f32[4]\n    %a: f32[4] = all_reduce(%x) {group = \"tp\"}\n"
                           "    %b: f32[4] = all_reduce(%a) {group = \"dp+tp\"}\n    output %b\n";
  Program uniform = prog(mesh);
  EXPECT_TRUE(uniformSpmd(uniform));
  auto order = orderCollectives(uniform);
  ASSERT_TRUE(order.ok());
  EXPECT_EQ(order->colls.size(), 3u);  // two tp groups, one dp+tp group
  EXPECT_FALSE(uniformSpmd(prog("    input %x: f32[4]\n    %a: f32[4] = all_reduce(%x) {group = \"pairs\"}\n    output %a\n",
                                "  group pairs = [[0, 1], [2, 3]]\n")));
  auto twoClasses = parseProgram(
      "program p {\n  world 2\n  rank 0 {\n    input %x: f32[4]\n    %a: f32[4] = all_reduce(%x) {group = \"world\"}\n"
      "    output %a\n  }\n  rank 1 {\n    input %x: f32[4]\n    %a: f32[4] = all_reduce(%x) {group = \"world\"}\n"
      "    output %a\n  }\n}\n",
      "p.sp");
  ASSERT_TRUE(twoClasses.ok());
  EXPECT_FALSE(uniformSpmd(*twoClasses));
}

// Wherever uniformSpmd holds, the global order exists: random bodies of
// collectives over random joins of mesh axes never hang nor mismatch.
TEST(CollectiveOrder, UniformSpmdProgramsAlwaysOrder) {
  std::mt19937 rng(7);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  const char* names[] = {"a", "b", "c"};
  for (int i = 0; i < 200; ++i) {
    int axes = pick(1, 3), world = 1;
    std::string mesh;
    for (int a = 0; a < axes; ++a) {
      int n = pick(1, 3);
      world *= n;
      mesh += std::string(a ? ", " : "") + names[a] + " = " + std::to_string(n);
    }
    std::string body = "    input %v0: f32[4]\n";
    int steps = pick(1, 6);
    for (int k = 0; k < steps; ++k) {
      std::string group;
      for (int a = 0; a < axes; ++a)
        if (pick(0, 1) || (a == axes - 1 && group.empty())) group += std::string(group.empty() ? "" : "+") + names[a];
      body += "    %v" + std::to_string(k + 1) + ": f32[4] = " + (pick(0, 1) ? "all_reduce" : "broadcast") + "(%v" +
              std::to_string(k) + ") {group = \"" + group + "\"}\n";
    }
    body += "    output %v" + std::to_string(steps) + "\n";
    auto p = parseProgram("program p {\n  world " + std::to_string(world) + "\n  mesh [" + mesh + "]\n  rank 0.." +
                              std::to_string(world - 1) + " {\n" + body + "  }\n}\n",
                          "p.sp");
    ASSERT_TRUE(p.ok()) << p.error().str();
    ASSERT_TRUE(uniformSpmd(*p));
    auto order = orderCollectives(*p);
    EXPECT_TRUE(order.ok()) << order.error().str();
  }
}

// Peers by position in a group: one body per pipeline stage on a [pp, tp]
// mesh, each rank receiving from the rank of its tp position in the stage
// before; order, interpreter and deadlock messages name world ranks.
TEST(CollectiveOrder, PeersByGroupPosition) {
  auto p = parseProgram(R"(program p {
  world 4
  mesh [pp = 2, tp = 2]
  rank 0..1 {
    input %x: f32[2]
    send(%x) {group = "pp", peer = 1}
  }
  rank 2..3 {
    %y: f32[2] = recv() {group = "pp", peer = 0, dtype = f32, shape = [2]}
    output %y
  }
}
)", "pp.sp");
  ASSERT_TRUE(p.ok()) << p.error().str();
  EXPECT_EQ(p->numClasses(), 2);
  auto order = orderCollectives(*p);
  ASSERT_TRUE(order.ok()) << order.error().str();
  ASSERT_EQ(order->messages.size(), 2u);
  for (const auto& m : order->messages) EXPECT_EQ(m.dst, m.src + 2);
  std::vector<TensorMap> in(4);
  in[0] = {{"x", Tensor::fromFloats(DType::F32, {2}, std::vector<float>{1, 2})}};
  in[1] = {{"x", Tensor::fromFloats(DType::F32, {2}, std::vector<float>{3, 4})}};
  auto out = runProgram(*p, in);
  ASSERT_TRUE(out.ok()) << out.error().str();
  EXPECT_EQ(vals(out->at(2).at("y")), (std::vector<double>{1, 2}));
  EXPECT_EQ(vals(out->at(3).at("y")), (std::vector<double>{3, 4}));
  // A position outside the group, named at the rank.
  auto bad = parseProgram("program p {\n  world 2\n  mesh [pp = 2]\n  rank 0..1 {\n    input %x: f32[2]\n"
                          "    send(%x) {group = \"pp\", peer = 2}\n  }\n}\n",
                          "bad.sp");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().id, "bad-peer");
  EXPECT_NE(bad.error().message.find("rank 0:"), std::string::npos) << bad.error().str();
  // Both stages receive first: the deadlock names world ranks.
  auto hang = parseProgram(R"(program p {
  world 2
  mesh [pp = 2]
  rank 0 {
    %y: f32[2] = recv() {group = "pp", peer = 1, dtype = f32, shape = [2]}
    send(%y) {group = "pp", peer = 1}
  }
  rank 1 {
    %y: f32[2] = recv() {group = "pp", peer = 0, dtype = f32, shape = [2]}
    send(%y) {group = "pp", peer = 0}
  }
}
)", "hang.sp");
  ASSERT_TRUE(hang.ok()) << hang.error().str();
  auto dl = orderCollectives(*hang);
  ASSERT_FALSE(dl.ok());
  EXPECT_EQ(dl.error().id, "deadlock");
  EXPECT_NE(dl.error().message.find("rank 0 waits at recv 'y' (hang.sp:5:5) from rank 1"), std::string::npos)
      << dl.error().message;
}

TEST(CollectiveOrder, GroupCycleIsADeadlock) {
  Program p = parseTrustProgram("cycle_dist.sp");
  const std::string msg =
      "deadlock: ranks 0 -> 1 -> 2 -> 0 wait for each other in a cycle: rank 0 waits at broadcast 'a' "
      "(cycle_dist.sp:12:5) in group g01 [0, 1]; rank 1 waits at broadcast 'a' (cycle_dist.sp:20:5) in group g12 "
      "[1, 2]; rank 2 waits at broadcast 'a' (cycle_dist.sp:28:5) in group g20 [2, 0]";
  auto order = orderCollectives(p);
  ASSERT_FALSE(order.ok());
  EXPECT_EQ(order.error().id, "deadlock");
  EXPECT_EQ(order.error().message, msg);
  // The scheduler takes its matching from the same module: `run` reports
  // the same deadlock before any op runs.
  expectError(p, {}, "deadlock", msg);
}

TEST(CollectiveOrder, StepsFollowOneGlobalOrder) {
  // Rank 0 runs g01 then g20; rank 1 g01 then g12; rank 2 g12 then g20:
  // no cycle, three steps in the order they can run.
  ProgramBuilder pb(3, Mesh{});
  ASSERT_TRUE(pb.addGroup("g01", {{0, 1}}).ok());
  ASSERT_TRUE(pb.addGroup("g12", {{1, 2}}).ok());
  ASSERT_TRUE(pb.addGroup("g20", {{2, 0}}).ok());
  const char* groups[3][2] = {{"g01", "g20"}, {"g01", "g12"}, {"g12", "g20"}};
  for (int64_t r = 0; r < 3; ++r) {
    GraphBuilder gb("r");
    ASSERT_TRUE(gb.addInput("x", {DType::F32, {2}}).ok());
    ASSERT_TRUE(gb.addNode(OpKind::AllReduce, {"x"}, {"a"}, grp(groups[r][0]), {}, "a").ok());
    ASSERT_TRUE(gb.addNode(OpKind::AllReduce, {"a"}, {"b"}, grp(groups[r][1]), {}, "b").ok());
    ASSERT_TRUE(gb.addOutput("b").ok());
    ASSERT_TRUE(pb.setRank(r, std::move(gb)).ok());
  }
  Program p = build(std::move(pb));
  auto order = orderCollectives(p);
  ASSERT_TRUE(order.ok()) << order.error().str();
  ASSERT_EQ(order->colls.size(), 3u);
  EXPECT_EQ(order->colls[0].members, (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(order->colls[1].members, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(order->colls[2].members, (std::vector<int64_t>{2, 0}));
  EXPECT_EQ(order->colls[2].nodes, (std::vector<NodeId>{1, 1}));  // b on rank 2, b on rank 0
  EXPECT_EQ(order->collOf[0].at(0), 0);
  EXPECT_EQ(order->collOf[0].at(1), 2);
  // g01: a0 = a1 = 1 + 2; g12: b1 = a2 = 3 + 4; g20: b2 = b0 = 7 + 3.
  auto out = runProgram(p, xs({f32({2}, {1, 1}), f32({2}, {2, 2}), f32({2}, {4, 4})}));
  ASSERT_TRUE(out.ok()) << out.error().str();
  EXPECT_EQ(vals(out->at(0).at("b")), (std::vector<double>{10, 10}));
  EXPECT_EQ(vals(out->at(1).at("b")), (std::vector<double>{7, 7}));
  EXPECT_EQ(vals(out->at(2).at("b")), (std::vector<double>{10, 10}));
}

TEST(InterpProgramErrors, CollectiveWaitingForAFinishedRankDeadlocks) {
  ProgramBuilder pb(2, Mesh{{{"tp", 2}}});
  ASSERT_TRUE(pb.setRank(0, oneOp(OpKind::AllReduce, {DType::F32, {1}}, grp("tp"), "ar")).ok());
  ASSERT_TRUE(pb.setRank(1, oneOp(OpKind::Neg, {DType::F32, {1}}, {})).ok());
  expectError(build(std::move(pb)), {}, "deadlock",
              "deadlock: rank 0 waits at all_reduce 'ar' in group tp [0, 1]; rank 1 finished");
}

TEST(InterpProgramErrors, MismatchedCollectives) {
  ProgramBuilder pb(2, Mesh{{{"tp", 2}}});
  ASSERT_TRUE(pb.setRank(0, oneOp(OpKind::AllReduce, {DType::F32, {2}}, grp("tp"), "ar1",
                                  SourceLoc{"m.py", 3, 0, ""}))
                  .ok());
  ASSERT_TRUE(pb.setRank(1, oneOp(OpKind::AllGather, {DType::F32, {2}}, grp("tp"), "ag1")).ok());
  expectError(build(std::move(pb)), {}, "collective-mismatch",
              "group tp [0, 1]: rank 0 is at all_reduce 'ar1' (m.py:3) but rank 1 is at "
              "all_gather 'ag1'");
}

TEST(InterpProgramErrors, MismatchedShapesAndAttrs) {
  ProgramBuilder pb(2, Mesh{{{"tp", 2}}});
  ASSERT_TRUE(pb.setRank(0, oneOp(OpKind::AllReduce, {DType::F32, {2}}, grp("tp"), "a")).ok());
  ASSERT_TRUE(pb.setRank(1, oneOp(OpKind::AllReduce, {DType::F32, {3}}, grp("tp"), "b")).ok());
  expectError(build(std::move(pb)), {}, "collective-mismatch",
              "group tp [0, 1]: rank 0 is at all_reduce 'a' with input f32[2] but rank 1 is at "
              "all_reduce 'b' with input f32[3]");
  ProgramBuilder pb2(2, Mesh{{{"tp", 2}}});
  ASSERT_TRUE(pb2.setRank(0, oneOp(OpKind::AllReduce, {DType::F32, {2}}, grp("tp"), "a")).ok());
  ASSERT_TRUE(pb2.setRank(1, oneOp(OpKind::AllReduce, {DType::F32, {2}},
                                   grp("tp", {{"reduce", std::string("max")}}), "b"))
                  .ok());
  expectError(build(std::move(pb2)), {}, "collective-mismatch",
              "group tp [0, 1]: rank 0 is at all_reduce 'a' with reduce sum but rank 1 is at "
              "all_reduce 'b' with reduce max");
  ProgramBuilder pb3(2, Mesh{{{"tp", 2}}});
  ASSERT_TRUE(pb3.setRank(0, oneOp(OpKind::AllGather, {DType::F32, {2, 2}}, grp("tp", {{"dim", int64_t(-1)}}), "a")).ok());
  ASSERT_TRUE(pb3.setRank(1, oneOp(OpKind::AllGather, {DType::F32, {2, 2}}, grp("tp", {{"dim", int64_t(0)}}), "b")).ok());
  expectError(build(std::move(pb3)), {}, "collective-mismatch",
              "group tp [0, 1]: rank 0 is at all_gather 'a' with dim 1 but rank 1 is at "
              "all_gather 'b' with dim 0");
}

TEST(InterpProgramErrors, RecvTypeAndUnreceivedSend) {
  ProgramBuilder pb(2, Mesh{});
  GraphBuilder g0("r0");
  ASSERT_TRUE(g0.addInput("a", {DType::F32, {3}}).ok());
  ASSERT_TRUE(g0.addNode(OpKind::Send, {"a"}, {}, {{"peer", int64_t(1)}, {"tag", int64_t(4)}}, {}, "s").ok());
  ASSERT_TRUE(pb.setRank(0, std::move(g0)).ok());
  ASSERT_TRUE(pb.setRank(1, oneOp(OpKind::Recv, {DType::F32, {1}},
                                  {{"peer", int64_t(0)}, {"tag", int64_t(4)}, {"dtype", DType::F32},
                                   {"shape", Shape{2}}},
                                  "r"))
                  .ok());
  expectError(build(std::move(pb)), {}, "recv-mismatch",
              "rank 1: recv 'r' from rank 0 tag 4 expects f32[2] but send 's' on rank 0 sent f32[3]");
  ProgramBuilder pb2(2, Mesh{});
  GraphBuilder h0("r0");
  ASSERT_TRUE(h0.addInput("a", {DType::F32, {3}}).ok());
  ASSERT_TRUE(h0.addNode(OpKind::Send, {"a"}, {}, {{"peer", int64_t(1)}, {"tag", int64_t(4)}}, {}, "s").ok());
  ASSERT_TRUE(pb2.setRank(0, std::move(h0)).ok());
  ASSERT_TRUE(pb2.setRank(1, oneOp(OpKind::Neg, {DType::F32, {1}}, {})).ok());
  expectError(build(std::move(pb2)), {}, "unreceived-send",
              "rank 0: send 's' to rank 1 tag 4 was never received");
}

TEST(InterpProgramErrors, InputErrorsNameTheRank) {
  Program p = sameOp(2, OpKind::AllReduce, {DType::F32, {2}}, grp("tp"));
  expectError(p, {{{"x", Tensor(DType::I32, {2})}}, {}}, "input-dtype",
              "rank 0: input 'x': dtype is i32 but the graph declares f32[2]");
  expectError(p, {{}}, "bad-given", "inputs given for 1 ranks but the program has 2");
  RunOptions strict;
  strict.fillMissing = false;
  auto r = runProgram(p, {{}, {}}, strict);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().message, "rank 0: input 'x' (f32[2]) was not given and has no data in the model");
}

TEST(InterpProgramErrors, LocalNodeErrorsNameTheRank) {
  ProgramBuilder pb(2, Mesh{{{"tp", 2}}});
  for (int64_t r = 0; r < 2; ++r) {
    GraphBuilder gb("r");
    EXPECT_TRUE(gb.addInput("x", {DType::I32, {1}}).ok());
    EXPECT_TRUE(gb.addParam("t", {DType::F32, {3, 2}}).ok());
    EXPECT_TRUE(gb.addNode(OpKind::Gather, {"t", "x"}, {"e"}, {}, SourceLoc{"m.py", 7, 0, ""}, "g").ok());
    EXPECT_TRUE(gb.addNode(OpKind::AllReduce, {"e"}, {"y"}, grp("tp")).ok());
    EXPECT_TRUE(gb.addOutput("y").ok());
    ASSERT_TRUE(pb.setRank(r, std::move(gb)).ok());
  }
  std::vector<TensorMap> in{{{"x", Tensor(DType::I32, {1})}}, {{"x", Tensor::scalar(DType::I32, 3).reshaped({1})}}};
  expectError(build(std::move(pb)), in, "index-out-of-range",
              "rank 1: gather 'g' (m.py:7): index 3 is out of range for dim 3");
}

TEST(InterpCollectiveMath, ReduceAndSplitEdgeCases) {
  Tensor a(DType::I8, {2}), b(DType::I8, {2});
  a.setFromDouble(0, 100);
  b.setFromDouble(0, 100);
  auto s = reduceTensors(std::vector<Tensor>{a, b}, ReduceOp::Sum);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->getAsDouble(0), -56);  // wraps like NCCL's int8 sum
  auto avg = reduceTensors(std::vector<Tensor>{a, b}, ReduceOp::Avg);
  ASSERT_FALSE(avg.ok());
  EXPECT_EQ(avg.error().message, "reduce avg needs a float dtype, got i8");
  auto nan = reduceTensors(std::vector<Tensor>{f32({1}, {NAN}), f32({1}, {1})}, ReduceOp::Max);
  ASSERT_TRUE(nan.ok());
  EXPECT_TRUE(std::isnan(nan->getAsDouble(0)));
  // f16 accumulates in f32 and rounds once: 1024 + 0.5 + 0.5 = 1025 (per-step
  // f16 rounding would give 1024).
  std::vector<Tensor> halves;
  for (float v : {1024.0f, 0.5f, 0.5f}) halves.push_back(Tensor::fromFloats(DType::F16, {1}, std::vector<float>{v}));
  auto h = reduceTensors(halves, ReduceOp::Sum);
  ASSERT_TRUE(h.ok());
  EXPECT_EQ(h->getAsDouble(0), 1025);
  Tensor t(DType::Bool, {2}), u(DType::Bool, {2});
  t.setFromDouble(0, 1);
  u.setFromDouble(0, 1);
  u.setFromDouble(1, 1);
  EXPECT_EQ(vals(*reduceTensors(std::vector<Tensor>{t, u}, ReduceOp::Min)), (std::vector<double>{1, 0}));
  EXPECT_EQ(vals(*reduceTensors(std::vector<Tensor>{t, u}, ReduceOp::Sum)), (std::vector<double>{1, 1}));
  // all_to_all along one dim: member j gets chunk j of every member, in order.
  auto a2a = execCollective(OpKind::AllToAll, {{"split_dim", int64_t(0)}, {"concat_dim", int64_t(0)}},
                            std::vector<Tensor>{f32({2}, {1, 2}), f32({2}, {3, 4})});
  ASSERT_TRUE(a2a.ok());
  EXPECT_EQ(vals((*a2a)[0]), (std::vector<double>{1, 3}));
  EXPECT_EQ(vals((*a2a)[1]), (std::vector<double>{2, 4}));
  auto split = splitTensor(Tensor(DType::F32, {5, 2}), 0, 2);
  ASSERT_FALSE(split.ok());
  EXPECT_EQ(split.error().message, "dim 0 of f32[5, 2] (extent 5) does not divide into 2 parts");
}

}  // namespace
}  // namespace sp::ir

namespace sp::ir {
namespace {

// The per-rank index of the collective order: written in any order, read
// after seal() by binary search; a node set twice keeps its last index.
TEST(NodeIndex, SealedLookupsKeepTheLastSet) {
  NodeIndex ix;
  for (NodeId n : {7, 3, 11, 0, 5}) ix.set(n, int(n) * 10);
  ix.set(3, 99);
  ix.seal();
  EXPECT_EQ(ix.size(), 5u);
  EXPECT_EQ(ix.at(0), 0);
  EXPECT_EQ(ix.at(3), 99);
  EXPECT_EQ(ix.at(11), 110);
  EXPECT_TRUE(ix.count(5));
  EXPECT_FALSE(ix.count(4));
  EXPECT_EQ(ix.find(12), nullptr);
  NodeIndex empty;
  empty.seal();
  EXPECT_EQ(empty.find(0), nullptr);
}

}  // namespace
}  // namespace sp::ir

// ONNX importer tests: PyTorch-exported fixtures (tests/fixtures/onnx, made
// by tests/fixtures/make_fixtures.py) run through the interpreter and
// compared with torch's outputs; dynamic axes; and malformed models
// (tests/data/onnx_bad, made by tests/fixtures/make_bad_onnx.py), each
// asserting its diagnostic.
#include "frontend/onnx_import.h"

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "ir/interpreter.h"
#include "ir/npy.h"
#include "ir/program.h"

namespace sp::frontend {
namespace {

using ir::Tensor;

std::string fixture(const std::string& f) {
  return std::string(SP_SOURCE_DIR) + "/tests/fixtures/onnx/" + f;
}
std::string bad(const std::string& f) {
  return std::string(SP_SOURCE_DIR) + "/tests/data/onnx_bad/" + f;
}

struct Model {
  std::string name;
  std::vector<std::string> inputs, outputs;
  // Bound on max|got - want| / max(1, max|want|). f32 with a different
  // summation order (BLAS matmul, reductions) differs from torch by a few
  // ulps per op; 1e-5 holds with margin for these depths.
  double tol = 1e-5;
};

const std::vector<Model>& models() {
  static const std::vector<Model> m = {
      {"gpt2_block", {"x"}, {"y"}},
      {"llama_block", {"x"}, {"y"}},
      {"gpt_lm", {"idx", "targets"}, {"logits", "loss"}},
      {"moe_block", {"x"}, {"y"}},
  };
  return m;
}

// Returns max|got - want| / max(1, max|want|).
double relError(const Tensor& got, const Tensor& want) {
  double maxDiff = 0, maxWant = 1;
  for (int64_t i = 0; i < want.numel(); ++i) {
    double w = want.getAsDouble(i), g = got.getAsDouble(i);
    if (std::isnan(g) != std::isnan(w)) return INFINITY;
    maxWant = std::max(maxWant, std::fabs(w));
    maxDiff = std::max(maxDiff, std::fabs(g - w));
  }
  return maxDiff / maxWant;
}

void runAndCompare(const Model& m, const ir::Graph& g, const std::string& set,
                   const std::string& variant) {
  ir::TensorMap given;
  for (const auto& in : m.inputs) {
    auto t = ir::readNpy(fixture(m.name + "." + (set == "1" ? "in" : "in2") + "." + in + ".npy"));
    ASSERT_TRUE(t.ok()) << t.error().str();
    given[in] = *t;
  }
  auto out = ir::runGraph(g, given);
  ASSERT_TRUE(out.ok()) << variant << ": " << out.error().str();
  for (const auto& o : m.outputs) {
    auto want =
        ir::readNpy(fixture(m.name + "." + (set == "1" ? "out" : "out2") + "." + o + ".npy"));
    ASSERT_TRUE(want.ok()) << want.error().str();
    ASSERT_TRUE(out->count(o)) << variant << ": no output " << o;
    const Tensor& got = out->at(o);
    ASSERT_EQ(got.dims(), want->dims()) << variant << " " << o;
    double err = relError(got, *want);
    std::printf("  %-22s set %s output %-7s max rel err %.3g (bound %.0e)\n", variant.c_str(),
                set.c_str(), o.c_str(), err, m.tol);
    EXPECT_LE(err, m.tol) << variant << " " << o;
  }
}

class OnnxFixture : public ::testing::TestWithParam<std::tuple<int, int, bool>> {};

TEST_P(OnnxFixture, MatchesTorch) {
  auto [mi, opset, dyn] = GetParam();
  const Model& m = models()[size_t(mi)];
  std::string variant = m.name + "_op" + std::to_string(opset) + (dyn ? "_dyn" : "");
  auto g = importOnnxFile(fixture(variant + ".onnx"));
  ASSERT_TRUE(g.ok()) << g.error().str();
  // Inputs keep their ONNX names; dynamic axes become symbols.
  ASSERT_EQ(g->inputs().size(), m.inputs.size());
  for (size_t i = 0; i < m.inputs.size(); ++i) {
    const auto& v = g->value(g->inputs()[i]);
    EXPECT_EQ(v.name, m.inputs[i]);
    std::string shape = v.type.str();
    if (dyn) {
      EXPECT_EQ(v.type.shape.at(0), ir::Dim::sym("batch")) << shape;
      EXPECT_EQ(v.type.shape.at(1), ir::Dim::sym("seq")) << shape;
    } else {
      EXPECT_TRUE(ir::isConcrete(v.type.shape)) << shape;
    }
  }
  EXPECT_FALSE(g->params().empty());
  for (ir::ValueId p : g->params()) EXPECT_NE(g->paramData(p), nullptr);
  runAndCompare(m, *g, "1", variant);
  if (dyn) runAndCompare(m, *g, "2", variant);  // other batch and seq
}

INSTANTIATE_TEST_SUITE_P(Fixtures, OnnxFixture,
                         ::testing::Combine(::testing::Range(0, 4), ::testing::Values(13, 17),
                                            ::testing::Bool()),
                         [](const auto& info) {
                           return models()[size_t(std::get<0>(info.param))].name + "_op" +
                                  std::to_string(std::get<1>(info.param)) +
                                  (std::get<2>(info.param) ? "_dyn" : "");
                         });

TEST(OnnxImport, SourceLocationsNameOnnxNodes) {
  auto g = importOnnxFile(fixture("gpt2_block_op17.onnx"));
  ASSERT_TRUE(g.ok()) << g.error().str();
  bool sawLayerNorm = false;
  for (const auto& n : g->nodes()) {
    EXPECT_FALSE(n.loc.detail.empty());
    EXPECT_NE(n.loc.file.find("gpt2_block_op17.onnx"), std::string::npos);
    if (n.op == ir::OpKind::LayerNorm) sawLayerNorm = true;
  }
  EXPECT_TRUE(sawLayerNorm);
}

TEST(OnnxImport, DynamicReshapeTargetsAreSymbolic) {
  auto g = importOnnxFile(fixture("gpt2_block_op13_dyn.onnx"));
  ASSERT_TRUE(g.ok()) << g.error().str();
  bool symbolicReshape = false;
  for (const auto& n : g->nodes())
    if (n.op == ir::OpKind::Reshape && !ir::isConcrete(ir::attrDims(n.attrs, "shape")))
      symbolicReshape = true;
  EXPECT_TRUE(symbolicReshape);
}

struct BadCase {
  const char* file;
  const char* id;
  const char* message;  // substring of Error::str()
};

TEST(OnnxImport, BadInputsReportTheirError) {
  const BadCase cases[] = {
      {"truncated.onnx", "onnx-parse", "cannot parse the onnx model"},
      {"corrupt.onnx", "onnx-parse", "cannot parse the onnx model"},
      {"unknown_op.onnx", "onnx-unsupported-op",
       "bad/unknown_op.onnx: node 'Bar_12': unsupported onnx op 'com.foo::Bar' (node 'Bar_12')"},
      {"undefined_input.onnx", "onnx-checker", "input 'w' of node"},
      {"absurd_dims_input.onnx", "bad-dim", "input 'x': dim 4611686018427387904 is out of range"},
      {"absurd_dims_value_info.onnx", "bad-dim",
       "value 'h': dim 4611686018427387904 is out of range"},
      {"absurd_dims_initializer.onnx", "bad-dim",
       "initializer 'w': dim 4611686018427387904 is out of range"},
      {"shape_mismatch.onnx", "onnx-shape-inference", "MatMul"},
      {"declared_mismatch.onnx", "onnx-shape-inference",
       "Inferred shape and existing shape differ in dimension 0: (6) vs (3)"},
      {"cycle.onnx", "onnx-checker", "topologically sorted"},
      {"not_constant.onnx", "onnx-not-constant",
       "node 'Reshape_7': Reshape: shape ('s') is not constant after folding"},
      {"no_such_file.onnx", "file-not-found", "cannot open"},
      {"conv_zero_stride.onnx", "onnx-shape-inference",
       "bad/conv_zero_stride.onnx: onnx shape inference fails: libonnx crashed (signal 8"},
  };
  for (const auto& c : cases) {
    auto g = importOnnxFile(bad(c.file));
    ASSERT_FALSE(g.ok()) << c.file;
    std::printf("  %-30s %s: %s\n", c.file, g.error().id.c_str(), g.error().str().c_str());
    EXPECT_EQ(g.error().id, c.id) << c.file << ": " << g.error().str();
    EXPECT_NE(g.error().str().find(c.message), std::string::npos)
        << c.file << ": " << g.error().str();
  }
}

TEST(OnnxImport, BytesApiMatchesFileApi) {
  auto g = importOnnxBytes(std::string("\x08\x07\x12", 3), "mem.onnx");
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.error().location, "mem.onnx");
}

// A one-node-at-a-time ONNX model built in memory.
struct ModelMaker {
  onnx::ModelProto m;
  ModelMaker() {
    m.set_ir_version(8);
    auto* o = m.add_opset_import();
    o->set_version(17);
    auto* ms = m.add_opset_import();
    ms->set_domain("com.microsoft");
    ms->set_version(1);
    m.mutable_graph()->set_name("made");
  }
  static void setType(onnx::ValueInfoProto* vi, const std::string& name, std::vector<int64_t> dims,
                      int32_t et = onnx::TensorProto::FLOAT) {
    vi->set_name(name);
    auto* tt = vi->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(et);
    for (int64_t d : dims) tt->mutable_shape()->add_dim()->set_dim_value(d);
  }
  void input(const std::string& n, std::vector<int64_t> dims) {
    setType(m.mutable_graph()->add_input(), n, dims);
  }
  void output(const std::string& n, std::vector<int64_t> dims) {
    setType(m.mutable_graph()->add_output(), n, dims);
  }
  void init(const std::string& n, std::vector<int64_t> dims, std::vector<float> v) {
    auto* t = m.mutable_graph()->add_initializer();
    t->set_name(n);
    t->set_data_type(onnx::TensorProto::FLOAT);
    for (int64_t d : dims) t->add_dims(d);
    for (float f : v) t->add_float_data(f);
  }
  onnx::NodeProto* node(const std::string& op, std::vector<std::string> ins,
                        std::vector<std::string> outs, const std::string& domain = "") {
    auto* n = m.mutable_graph()->add_node();
    n->set_op_type(op);
    n->set_domain(domain);
    n->set_name(op + "_" + std::to_string(m.graph().node_size() - 1));
    for (auto& i : ins) n->add_input(i);
    for (auto& o : outs) n->add_output(o);
    return n;
  }
  std::string write(const std::string& file) {
    std::string path = ::testing::TempDir() + file;
    FILE* f = std::fopen(path.c_str(), "wb");
    std::string bytes = m.SerializeAsString();
    std::fwrite(bytes.data(), 1, bytes.size(), f);
    std::fclose(f);
    return path;
  }
};

TEST(OnnxImport, MicrosoftCollectivesBuildPerRankPrograms) {
  // Row-parallel linear: rank r holds w_r; y = all_reduce(x_r @ w_r), then
  // all_gather along axis 1.
  std::vector<std::string> paths;
  for (int r = 0; r < 2; ++r) {
    ModelMaker mk;
    mk.input("x", {2, 2});
    mk.init("w", {2, 3}, {float(r + 1), 0, 1, 0, float(r + 1), 1});
    mk.node("MatMul", {"x", "w"}, {"p"});
    mk.node("AllReduce", {"p"}, {"s"}, "com.microsoft");
    auto* ag = mk.node("AllGather", {"s"}, {"y"}, "com.microsoft");
    auto* a = ag->add_attribute();
    a->set_name("axis");
    a->set_type(onnx::AttributeProto::INT);
    a->set_i(1);
    mk.output("y", {2, 6});
    paths.push_back(mk.write("tp_r" + std::to_string(r) + ".onnx"));
  }
  ir::ProgramBuilder pb(2, {});
  OnnxOptions opts;
  opts.groupSize = [](const std::string&) -> Result<int64_t> { return int64_t(2); };
  for (int r = 0; r < 2; ++r) {
    auto b = importOnnxToBuilder(paths[size_t(r)], opts);
    ASSERT_TRUE(b.ok()) << b.error().str();
    ASSERT_TRUE(pb.setRank(r, std::move(*b)).ok());
  }
  auto prog = std::move(pb).finish();
  ASSERT_TRUE(prog.ok()) << prog.error().str();
  EXPECT_EQ(prog->rank(0).nodes()[1].op, ir::OpKind::AllReduce);
  EXPECT_EQ(ir::attrStr(prog->rank(0).nodes()[1].attrs, "group"), "world");
  Tensor x(ir::DType::F32, {2, 2});
  for (int i = 0; i < 4; ++i) x.setFromDouble(i, i + 1);  // [[1, 2], [3, 4]]
  auto out = ir::runProgram(*prog, {{{"x", x}}, {{"x", x}}});
  ASSERT_TRUE(out.ok()) << out.error().str();
  // sum_r x @ w_r = x @ [[3, 0, 2], [0, 3, 2]]; gathered twice along axis 1.
  const Tensor& y = (*out)[1].at("y");
  ASSERT_EQ(y.dims(), (std::vector<int64_t>{2, 6}));
  std::vector<double> want = {3, 6, 6, 3, 6, 6, 9, 12, 14, 9, 12, 14};
  for (int i = 0; i < 12; ++i) EXPECT_EQ(y.getAsDouble(i), want[size_t(i)]) << i;
}

std::string tpFixture(const std::string& f) {
  return std::string(SP_SOURCE_DIR) + "/tests/fixtures/onnx_tp/" + f;
}

std::vector<std::string> rankPaths(const std::string& dir, const std::string& stem, int n) {
  std::vector<std::string> out;
  for (int r = 0; r < n; ++r) out.push_back(tpFixture(dir + "/" + stem + ".r" + std::to_string(r) + ".onnx"));
  return out;
}

Tensor counting(std::vector<int64_t> dims) {
  Tensor t(ir::DType::F32, dims);
  for (int64_t i = 0; i < t.numel(); ++i) t.setFromDouble(i, 0.25 * double(i % 7) - 0.5);
  return t;
}

// ORT's AllGather with group_size 2 in a world of 4 ranks: two TP groups of
// contiguous ranks; axis -1 is the last dim. Every rank computes S's output.
TEST(OnnxImport, OrtAllGatherGroupSizeSelectsContiguousGroups) {
  auto prog = importOnnxProgram(rankPaths("mlp_ag_dp2_tp2", "mlp", 4));
  ASSERT_TRUE(prog.ok()) << prog.error().str();
  auto part = prog->partition(onnxContiguousGroup(2));
  ASSERT_TRUE(part.ok()) << part.error().str();
  EXPECT_EQ(*part, (ir::GroupPartition{{0, 1}, {2, 3}}));
  const ir::Node* ag = nullptr;
  for (const auto& n : prog->rank(3).nodes())
    if (n.op == ir::OpKind::AllGather) ag = &n;
  ASSERT_NE(ag, nullptr);
  EXPECT_EQ(ir::attrStr(ag->attrs, "group"), "onnx_group2");
  EXPECT_EQ(ir::attrInt(ag->attrs, "dim"), 1);
  auto seq = importOnnxFile(tpFixture("mlp.seq.onnx"));
  ASSERT_TRUE(seq.ok()) << seq.error().str();
  Tensor x = counting({4, 8});
  auto want = ir::runGraph(*seq, {{"x", x}});
  ASSERT_TRUE(want.ok()) << want.error().str();
  auto got = ir::runProgram(*prog, {{{"x", x}}, {{"x", x}}, {{"x", x}}, {{"x", x}}});
  ASSERT_TRUE(got.ok()) << got.error().str();
  for (int r = 0; r < 4; ++r) EXPECT_LT(relError((*got)[size_t(r)].at("y"), want->at("y")), 1e-5) << r;
}

// group_size equal to the world size is the world; AllReduce has no
// group_size and is over every rank.
TEST(OnnxImport, OrtCollectivesOverTheWorld) {
  auto prog = importOnnxProgram(rankPaths("head_tp4", "head", 4));
  ASSERT_TRUE(prog.ok()) << prog.error().str();
  EXPECT_TRUE(prog->namedGroups().empty());
  int seen = 0;
  for (const auto& n : prog->rank(2).nodes())
    if (ir::opInfo(n.op).category == ir::OpCategory::Collective) {
      EXPECT_EQ(ir::attrStr(n.attrs, "group"), "world");
      ++seen;
    }
  EXPECT_EQ(seen, 2);
  auto seq = importOnnxFile(tpFixture("head.seq.onnx"));
  ASSERT_TRUE(seq.ok()) << seq.error().str();
  Tensor x = counting({4, 8});
  auto want = ir::runGraph(*seq, {{"x", x}});
  ASSERT_TRUE(want.ok()) << want.error().str();
  auto got = ir::runProgram(*prog, {{{"x", x}}, {{"x", x}}, {{"x", x}}, {{"x", x}}});
  ASSERT_TRUE(got.ok()) << got.error().str();
  for (int r = 0; r < 4; ++r) EXPECT_LT(relError((*got)[size_t(r)].at("y"), want->at("y")), 1e-5) << r;
}

// One AllGather node with the given attributes, written for `ranks` ranks.
std::vector<std::string> allGatherFiles(const std::string& tag, int ranks,
                                        std::vector<std::pair<std::string, int64_t>> attrs,
                                        std::vector<int64_t> outDims) {
  std::vector<std::string> paths;
  for (int r = 0; r < ranks; ++r) {
    ModelMaker mk;
    mk.input("x", {2, 3});
    auto* n = mk.node("AllGather", {"x"}, {"y"}, "com.microsoft");
    for (const auto& [k, v] : attrs) {
      auto* a = n->add_attribute();
      a->set_name(k);
      a->set_type(onnx::AttributeProto::INT);
      a->set_i(v);
    }
    mk.output("y", outDims);
    paths.push_back(mk.write(tag + ".r" + std::to_string(r) + ".onnx"));
  }
  return paths;
}

TEST(OnnxImport, OrtGroupSizeErrors) {
  auto three = importOnnxProgram(allGatherFiles("ag_g3", 4, {{"group_size", 3}, {"axis", 0}}, {6, 3}));
  ASSERT_FALSE(three.ok());
  EXPECT_EQ(three.error().id, "onnx-group");
  EXPECT_EQ(three.error().message,
            "com.microsoft::AllGather 'AllGather_0' on rank 0: group_size 3 does not divide the world size 4 (the "
            "number of rank files)");
  auto big = importOnnxProgram(allGatherFiles("ag_g4", 2, {{"group_size", 4}, {"axis", 0}}, {8, 3}));
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.error().message,
            "com.microsoft::AllGather 'AllGather_0' on rank 0: group_size 4 exceeds the world size 2 (the number of "
            "rank files)");
  // ORT's default group_size 1 would size the output for one rank.
  auto missing = importOnnxProgram(allGatherFiles("ag_nog", 2, {{"axis", 0}}, {4, 3}));
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().id, "onnx-group");
  EXPECT_EQ(missing.error().message,
            "com.microsoft::AllGather 'AllGather_0' on rank 0 has no group_size attribute (how many of the 2 ranks "
            "it spans)");
  EXPECT_NE(missing.error().location.find("ag_nog.r0.onnx"), std::string::npos) << missing.error().str();
  auto axis = importOnnxProgram(allGatherFiles("ag_ax", 2, {{"group_size", 2}, {"axis", -3}}, {2, 6}));
  ASSERT_FALSE(axis.ok());
  EXPECT_EQ(axis.error().id, "bad-axis");
  EXPECT_EQ(axis.error().message,
            "com.microsoft::AllGather 'AllGather_0': axis -3 out of range for input 'x' of rank 2");
  auto zero = importOnnxProgram(allGatherFiles("ag_g0", 2, {{"group_size", 0}}, {2, 3}));
  ASSERT_FALSE(zero.ok());
  EXPECT_EQ(zero.error().message, "com.microsoft::AllGather 'AllGather_0': group_size 0 is not positive");
  // A single graph cannot gather from other ranks.
  auto single = importOnnxFile(allGatherFiles("ag_single", 1, {{"group_size", 2}, {"axis", 1}}, {2, 6})[0]);
  ASSERT_FALSE(single.ok());
  EXPECT_EQ(single.error().id, "onnx-group");
  EXPECT_EQ(single.error().message,
            "com.microsoft::AllGather 'AllGather_0' over group_size 2 in a single graph: a distributed program is a "
            "directory of per-rank files (*.r<N>.onnx)");
  // group_size 1 is the identity, also in a single graph.
  auto one = importOnnxFile(allGatherFiles("ag_one", 1, {{"group_size", 1}, {"axis", 1}}, {2, 3})[0]);
  ASSERT_TRUE(one.ok()) << one.error().str();
  for (const auto& n : one->nodes()) EXPECT_NE(n.op, ir::OpKind::AllGather);
  // Negative axes count from the end.
  auto neg = importOnnxProgram(allGatherFiles("ag_neg", 2, {{"group_size", 2}, {"axis", -1}}, {2, 6}));
  ASSERT_TRUE(neg.ok()) << neg.error().str();
  EXPECT_EQ(ir::attrInt(neg->rank(1).nodes()[0].attrs, "dim"), 1);
}

TEST(OnnxImport, TrainingDropoutTakesAnExplicitStream) {
  ModelMaker mk;
  mk.input("x", {4});
  mk.node("Constant", {}, {"r"})->add_attribute()->CopyFrom([] {
    onnx::AttributeProto a;
    a.set_name("value_float");
    a.set_type(onnx::AttributeProto::FLOAT);
    a.set_f(0.5f);
    return a;
  }());
  auto* c = mk.node("Constant", {}, {"t"});
  auto* a = c->add_attribute();
  a->set_name("value");
  a->set_type(onnx::AttributeProto::TENSOR);
  a->mutable_t()->set_data_type(onnx::TensorProto::BOOL);
  a->mutable_t()->add_int32_data(1);
  mk.node("Dropout", {"x", "r", "t"}, {"y"});
  mk.output("y", {4});
  auto g = importOnnxFile(mk.write("dropout.onnx"));
  ASSERT_TRUE(g.ok()) << g.error().str();
  ASSERT_EQ(g->inputs().size(), 2u);
  EXPECT_EQ(g->value(g->inputs()[1]).name, "y.stream");
  Tensor x = Tensor::fromFloats(ir::DType::F32, {4}, std::vector<float>{1, 2, 3, 4});
  Tensor s = Tensor::fromFloats(ir::DType::F32, {4}, std::vector<float>{0.9f, 0.1f, 0.7f, 0.2f});
  auto out = ir::runGraph(*g, {{"x", x}, {"y.stream", s}});
  ASSERT_TRUE(out.ok()) << out.error().str();
  std::vector<double> want = {2, 0, 6, 0};  // kept where stream >= 0.5, scaled by 2
  for (int i = 0; i < 4; ++i) EXPECT_EQ(out->at("y").getAsDouble(i), want[size_t(i)]);
}

}  // namespace
}  // namespace sp::frontend

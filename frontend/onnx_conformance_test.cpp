// ONNX backend node conformance: every case under
// /usr/include/onnx/backend/test/data/node whose ops the importer supports is
// imported, run with the interpreter on each test_data_set_*, and compared
// with the expected outputs (rtol 1e-3, atol 1e-5). Inputs that the IR needs
// as attributes (Reshape shape, Slice starts, TopK k, Clip bounds...) are baked
// into the model as initializers when the plain import reports them
// non-constant. The test fails on any mismatch or unexpected import error.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "frontend/onnx_import.h"
#include "ir/interpreter.h"

namespace sp::frontend {
namespace {

namespace fs = std::filesystem;

constexpr const char* kNodeDir = "/usr/include/onnx/backend/test/data/node";
constexpr double kRtol = 1e-3, kAtol = 1e-5;

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<fs::path> sortedDirs(const fs::path& dir, const std::string& prefix) {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_directory() && e.path().filename().string().rfind(prefix, 0) == 0)
      out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

// Compare one output; returns "" when it matches.
std::string compare(const ir::Tensor& got, const ir::Tensor& want) {
  if (got.dims() != want.dims())
    return "shape " + got.type().str() + " vs expected " + want.type().str();
  if (ir::isFloat(got.dtype()) != ir::isFloat(want.dtype()))
    return "dtype " + std::string(ir::dtypeName(got.dtype())) + " vs expected " +
           std::string(ir::dtypeName(want.dtype()));
  for (int64_t i = 0; i < want.numel(); ++i) {
    double g = got.getAsDouble(i), w = want.getAsDouble(i);
    if (std::isnan(w) && std::isnan(g)) continue;
    if (std::isinf(w) && g == w) continue;
    if (!(std::fabs(g - w) <= kAtol + kRtol * std::fabs(w))) {
      char buf[160];
      std::snprintf(buf, sizeof buf, "element %lld: got %.9g, expected %.9g",
                    static_cast<long long>(i), g, w);
      return buf;
    }
  }
  return "";
}

struct Outcome {
  enum Kind { Pass, Fail, SkipOp, SkipAttr } kind;
  std::string detail;
  std::set<ir::OpKind> ops = {};  // IR ops the case exercised (when it passed)
};

// Model with the integer and tiny graph inputs replaced by initializers
// holding the values of the first data set.
std::string bakeIntegerInputs(const onnx::ModelProto& model, const fs::path& dataSet,
                              std::set<std::string>& baked) {
  onnx::ModelProto m = model;
  auto* g = m.mutable_graph();
  for (int i = 0; i < g->input_size(); ++i) {
    int32_t et = g->input(i).type().tensor_type().elem_type();
    fs::path pb = dataSet / ("input_" + std::to_string(i) + ".pb");
    onnx::TensorProto t;
    if (!t.ParseFromString(slurp(pb))) continue;
    int64_t numel = 1;
    for (int64_t d : t.dims()) numel *= d;
    bool integer = et == onnx::TensorProto::INT64 || et == onnx::TensorProto::INT32 ||
                   et == onnx::TensorProto::BOOL;
    // Integer inputs and tiny ones (Clip bounds, Dropout ratio, OneHot values).
    if (!integer && numel > 2) continue;
    t.set_name(g->input(i).name());
    *g->add_initializer() = t;
    baked.insert(g->input(i).name());
  }
  return m.SerializeAsString();
}

Outcome runCase(const fs::path& dir) {
  fs::path modelPath = dir / "model.onnx";
  std::string bytes = slurp(modelPath);
  onnx::ModelProto model;
  if (!model.ParseFromString(bytes)) return {Outcome::Fail, "cannot parse model.onnx"};
  auto dataSets = sortedDirs(dir, "test_data_set_");
  if (dataSets.empty()) return {Outcome::Fail, "no test data"};
  std::set<std::string> baked;
  auto g = importOnnxBytes(bytes, modelPath.string());
  if (!g.ok() && g.error().id == "onnx-not-constant") {
    if (dataSets.size() > 1) return {Outcome::SkipAttr, "non-constant attribute input"};
    g = importOnnxBytes(bakeIntegerInputs(model, dataSets[0], baked), modelPath.string());
  }
  if (!g.ok()) {
    const std::string& id = g.error().id;
    if (id == "onnx-unsupported-op") {
      const std::string& msg = g.error().message;
      size_t a = msg.find('\''), b = msg.find('\'', a + 1);
      return {Outcome::SkipOp, msg.substr(a + 1, b - a - 1)};
    }
    if (id == "onnx-unsupported-attr" || id == "onnx-unsupported-dtype" ||
        id == "onnx-unsupported-type")
      return {Outcome::SkipAttr, g.error().str()};
    return {Outcome::Fail, "import: " + g.error().str()};
  }
  for (const auto& n : g->nodes())
    if (n.op == ir::OpKind::Dropout)
      return {Outcome::SkipAttr,
              "training-mode dropout draws from an explicit random stream input; "
              "its outputs differ from numpy's generator by design"};
  for (const auto& ds : dataSets) {
    ir::TensorMap given;
    const auto& gin = model.graph().input();
    for (int i = 0; i < gin.size(); ++i) {
      if (baked.count(gin[i].name())) continue;
      fs::path pb = ds / ("input_" + std::to_string(i) + ".pb");
      if (!fs::exists(pb)) continue;
      auto t = readOnnxTensor(pb.string());
      if (!t.ok()) return {Outcome::SkipAttr, "input: " + t.error().str()};
      given[gin[i].name()] = *t;
    }
    auto out = ir::runGraph(*g, given);
    if (!out.ok()) return {Outcome::Fail, "run: " + out.error().str()};
    const auto& gout = model.graph().output();
    for (int i = 0; i < gout.size(); ++i) {
      fs::path pb = ds / ("output_" + std::to_string(i) + ".pb");
      auto want = readOnnxTensor(pb.string());
      if (!want.ok()) return {Outcome::SkipAttr, "output: " + want.error().str()};
      auto it = out->find(gout[i].name());
      if (it == out->end()) return {Outcome::Fail, "missing output " + gout[i].name()};
      std::string diff = compare(it->second, *want);
      if (!diff.empty())
        return {Outcome::Fail,
                ds.filename().string() + " output '" + gout[i].name() + "': " + diff};
    }
  }
  Outcome pass{Outcome::Pass, "", {}};
  for (const auto& n : g->nodes()) pass.ops.insert(n.op);
  return pass;
}

// IR ops that no ONNX opset 13-17 backend node test can exercise, and why.
// Every other IR op must be covered by at least one passing case.
const std::map<ir::OpKind, std::string> kNotInOnnxNodeTests = {
    {ir::OpKind::RmsNorm, "RMSNormalization is opset 23"},
    {ir::OpKind::Range, "Range's inputs are constants there, so import folds it to a constant"},
    {ir::OpKind::Gelu, "Gelu is opset 20; torch exports erf/tanh forms"},
    {ir::OpKind::Silu, "no ONNX op; torch exports x * sigmoid(x)"},
    {ir::OpKind::Dropout, "training dropout draws from numpy's generator"},
    {ir::OpKind::Gemm,
     "ONNX Gemm imports as transpose, matmul, mul and add (the matmul lemmas apply); kernel tested in "
     "ir/kernels_test.cpp"},
    {ir::OpKind::AllReduce, "collective (tested in ir/scheduler_test.cpp)"},
    {ir::OpKind::AllGather, "collective (tested in ir/scheduler_test.cpp)"},
    {ir::OpKind::ReduceScatter, "collective (tested in ir/scheduler_test.cpp)"},
    {ir::OpKind::AllToAll, "collective (tested in ir/scheduler_test.cpp)"},
    {ir::OpKind::Broadcast, "collective (tested in ir/scheduler_test.cpp)"},
    {ir::OpKind::Send, "collective (tested in ir/scheduler_test.cpp)"},
    {ir::OpKind::Recv, "collective (tested in ir/scheduler_test.cpp)"},
};

// Failures caused by kernels outside the frontend (ir/kernels_*.cpp), kept
// here only while they are reported to their owner. Empty when none.
const std::set<std::string> kKnownKernelFailures = {};

TEST(OnnxConformance, BackendNodeTests) {
  if (!fs::exists(kNodeDir)) GTEST_SKIP() << "no ONNX backend test data at " << kNodeDir;
  int run = 0, passed = 0, skippedOp = 0, skippedAttr = 0, known = 0;
  std::map<std::string, int> unsupportedOps;
  std::vector<std::string> failures, attrSkips;
  std::set<ir::OpKind> covered;
  for (const auto& dir : sortedDirs(kNodeDir, "test_")) {
    std::string name = dir.filename().string();
    Outcome o = runCase(dir);
    switch (o.kind) {
      case Outcome::SkipOp:
        ++skippedOp;
        ++unsupportedOps[o.detail];
        break;
      case Outcome::SkipAttr:
        ++skippedAttr;
        attrSkips.push_back(name + ": " + o.detail);
        break;
      case Outcome::Pass:
        ++run;
        ++passed;
        covered.insert(o.ops.begin(), o.ops.end());
        break;
      case Outcome::Fail:
        ++run;
        if (kKnownKernelFailures.count(name)) {
          ++known;
          break;
        }
        failures.push_back(name + ": " + o.detail);
        break;
    }
  }
  std::printf(
      "onnx conformance: %d run, %d passed, %zu failed, %d known kernel failures, "
      "%d skipped as unsupported, %d skipped for unsupported attributes/types\n",
      run, passed, failures.size(), known, skippedOp, skippedAttr);
  std::string ops;
  for (const auto& [op, n] : unsupportedOps) ops += " " + op + "(" + std::to_string(n) + ")";
  std::printf("unsupported ops (%zu):%s\n", unsupportedOps.size(), ops.c_str());
  for (const auto& s : attrSkips) std::printf("  skipped: %s\n", s.c_str());
  for (const auto& f : failures) std::printf("  FAILED: %s\n", f.c_str());
  EXPECT_TRUE(failures.empty()) << failures.size() << " conformance cases fail";
  std::string uncovered;
  for (const auto& info : ir::allOps()) {
    if (covered.count(info.kind)) continue;
    auto why = kNotInOnnxNodeTests.find(info.kind);
    if (why != kNotInOnnxNodeTests.end()) {
      std::printf("  not covered by onnx node tests: %s (%s)\n", std::string(info.name).c_str(),
                  why->second.c_str());
      continue;
    }
    uncovered += " " + std::string(info.name);
  }
  std::printf("ir ops covered by passing cases: %zu of %zu\n", covered.size(), ir::allOps().size());
  EXPECT_TRUE(uncovered.empty()) << "IR ops no passing conformance case exercises:" << uncovered;
  EXPECT_GT(passed, 0);
}

}  // namespace
}  // namespace sp::frontend

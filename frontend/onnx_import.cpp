// ONNX model loading: protobuf parsing, external data, the ONNX checker and
// shape inference (with data propagation), then the graph walk that maps
// every node through the op table (onnx_ops.cpp) into a GraphBuilder.
#include "frontend/onnx_import.h"

#include <onnx/checker.h>
#include <onnx/shape_inference/implementation.h>

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <set>
#include <sstream>

#include "frontend/onnx_context.h"

namespace sp::frontend {

using namespace onnx_detail;

namespace {

namespace fs = std::filesystem;

Result<std::string> readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return makeError("file-not-found", "cannot open '" + path + "'", path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Replace external data references by raw_data read from files next to the model.
Status resolveExternal(onnx::TensorProto& t, const std::string& dir, const std::string& path) {
  if (t.data_location() != onnx::TensorProto::EXTERNAL) return okStatus();
  std::string location;
  int64_t offset = 0, length = -1;
  for (const auto& kv : t.external_data()) {
    try {
      if (kv.key() == "location")
        location = kv.value();
      else if (kv.key() == "offset")
        offset = std::stoll(kv.value());
      else if (kv.key() == "length")
        length = std::stoll(kv.value());
    } catch (const std::exception&) {
      return makeError("onnx-external-data",
                       "tensor '" + t.name() + "': bad external data entry '" + kv.key() + "' = '" +
                           kv.value() + "'",
                       path);
    }
  }
  fs::path rel(location);
  bool escapes = location.empty() || rel.is_absolute();
  for (const auto& part : rel)
    if (part == "..") escapes = true;
  if (escapes)
    return makeError("onnx-external-data",
                     "tensor '" + t.name() + "': external data location '" + location +
                         "' must be a relative path inside the model directory",
                     path);
  std::string file = (fs::path(dir) / rel).string();
  std::ifstream in(file, std::ios::binary);
  if (!in)
    return makeError("onnx-external-data",
                     "tensor '" + t.name() + "': cannot open external data file '" + file + "'",
                     path);
  in.seekg(0, std::ios::end);
  int64_t size = int64_t(in.tellg());
  if (length < 0) length = size - offset;
  if (offset < 0 || length < 0 || offset + length > size)
    return makeError("onnx-external-data",
                     "tensor '" + t.name() + "': external range [" + std::to_string(offset) + ", " +
                         std::to_string(offset + length) + ") exceeds file '" + file + "' of " +
                         std::to_string(size) + " bytes",
                     path);
  std::string data(size_t(length), '\0');
  in.seekg(offset);
  in.read(data.data(), length);
  t.set_raw_data(std::move(data));
  t.clear_external_data();
  t.set_data_location(onnx::TensorProto::DEFAULT);
  return okStatus();
}

Status resolveAllExternal(onnx::GraphProto& g, const std::string& dir, const std::string& path) {
  for (auto& t : *g.mutable_initializer()) SP_TRY(resolveExternal(t, dir, path));
  for (auto& n : *g.mutable_node())
    for (auto& a : *n.mutable_attribute()) {
      if (a.has_t()) SP_TRY(resolveExternal(*a.mutable_t(), dir, path));
      if (a.has_g()) SP_TRY(resolveAllExternal(*a.mutable_g(), dir, path));
    }
  return okStatus();
}

// Absurd dims are rejected before the checker and shape inference see them.
Status validateDims(const onnx::GraphProto& g, const std::string& path) {
  auto checkDims = [&](const std::vector<int64_t>& dims, const std::string& what) -> Status {
    int64_t numel = 1;
    for (int64_t d : dims) {
      if (d < 0 || d > ir::kMaxElements)
        return makeError("bad-dim",
                         what + ": dim " + std::to_string(d) + " is out of range [0, 2^48]", path);
      if (d != 0 && numel > ir::kMaxElements / d)
        return makeError("bad-dim", what + ": more than 2^48 elements", path);
      numel *= d;
    }
    return okStatus();
  };
  for (const auto& t : g.initializer())
    SP_TRY(checkDims({t.dims().begin(), t.dims().end()}, "initializer '" + t.name() + "'"));
  for (const auto* list : {&g.input(), &g.value_info(), &g.output()})
    for (const auto& vi : *list) {
      if (!vi.type().has_tensor_type() || !vi.type().tensor_type().has_shape()) continue;
      std::vector<int64_t> dims;
      for (const auto& d : vi.type().tensor_type().shape().dim())
        if (d.has_dim_value()) dims.push_back(d.dim_value());
      std::string kind = list == &g.input() ? "input" : "value";
      SP_TRY(checkDims(dims, kind + " '" + vi.name() + "'"));
    }
  return okStatus();
}

// libonnx's shape inference crashes on some models that pass its checker
// (a failed assertion or a bad memory access inside the library). It runs
// in a forked child, so a crash there is an error naming the model, not the
// end of the process. The child sends back the model with inferred types,
// its initializers left out (the parent keeps its own), or the message of
// the exception that shape inference threw.
Status inferShapesIsolated(onnx::ModelProto& model, const std::string& path) {
  auto fail = [&](const std::string& why) {
    return makeError("onnx-shape-inference", "onnx shape inference fails: " + why, path);
  };
  int fds[2];
  if (::pipe(fds) != 0) return fail("cannot create a pipe for it");
  std::fflush(nullptr);
  pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    return fail("cannot fork a process for it");
  }
  if (pid == 0) {
    ::close(fds[0]);
    std::string out;
    try {
      onnx::ShapeInferenceOptions options(/*check_type=*/true, /*strict_mode=*/1,
                                          /*data_prop=*/true);
      onnx::shape_inference::InferShapes(model, onnx::OpSchemaRegistry::Instance(), options);
      model.mutable_graph()->clear_initializer();
      out = "M" + model.SerializeAsString();
    } catch (const std::exception& e) {
      out = std::string("E") + e.what();
    }
    const char* p = out.data();
    size_t left = out.size();
    while (left > 0) {
      ssize_t n = ::write(fds[1], p, left);
      if (n <= 0) ::_exit(2);
      p += n;
      left -= size_t(n);
    }
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string got;
  char buf[1 << 16];
  for (;;) {
    ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got.append(buf, size_t(n));
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFSIGNALED(status))
    return fail("libonnx crashed (signal " + std::to_string(WTERMSIG(status)) + ", " + ::strsignal(WTERMSIG(status)) +
                ") on this model");
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || got.empty())
    return fail("its process ended without a result (exit status " + std::to_string(status) + ")");
  if (got[0] == 'E') return fail(got.substr(1));
  onnx::ModelProto inferred;
  if (got[0] != 'M' || !inferred.ParseFromArray(got.data() + 1, int(got.size() - 1)))
    return fail("its result could not be read back");
  inferred.mutable_graph()->mutable_initializer()->Swap(model.mutable_graph()->mutable_initializer());
  model = std::move(inferred);
  return okStatus();
}

Result<onnx::ModelProto> parseAndCheck(const std::string& bytes, const std::string& path,
                                       const std::string& dir) {
  onnx::ModelProto model;
  if (bytes.empty() || !model.ParseFromString(bytes))
    return makeError("onnx-parse",
                     "cannot parse the onnx model (" + std::to_string(bytes.size()) +
                         " bytes): truncated or not an onnx protobuf",
                     path);
  if (!model.has_graph()) return makeError("onnx-parse", "the onnx model has no graph", path);
  SP_TRY(resolveAllExternal(*model.mutable_graph(), dir, path));
  SP_TRY(validateDims(model.graph(), path));
  try {
    onnx::checker::check_model(model);
  } catch (const std::exception& e) {
    return makeError("onnx-checker", std::string("onnx checker rejects the model: ") + e.what(),
                     path);
  }
  SP_TRY(inferShapesIsolated(model, path));
  return model;
}

std::string symPrefix(const std::string& name) {
  std::string s = name;
  for (char& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  return s + "_dim";
}

Status walkGraph(const onnx::ModelProto& model, Importer& im, const std::string& path) {
  const onnx::GraphProto& g = model.graph();
  for (const auto& in : g.input()) im.reserveName(in.name());
  for (const auto& t : g.initializer()) im.reserveName(t.name());
  for (const auto& n : g.node())
    for (const auto& o : n.output()) im.reserveName(o);
  std::set<std::string> inits;
  for (const auto& t : g.initializer()) {
    if (!g.sparse_initializer().empty()) break;
    SP_ASSIGN(ir::Tensor data, tensorFromProto(t, "initializer '" + t.name() + "'"));
    SP_TRY(im.addInitializer(t.name(), std::move(data)));
    inits.insert(t.name());
  }
  if (!g.sparse_initializer().empty())
    return makeError("onnx-unsupported-type", "sparse initializers are not supported", path);
  for (const auto& in : g.input()) {
    if (inits.count(in.name())) continue;  // a parameter with a default value
    auto t = typeFromOnnx(in.type(), "input '" + in.name() + "'", symPrefix(in.name()));
    if (!t) return makeError(t.error().id, t.error().message, path);
    SP_TRY(im.addGraphInput(in.name(), *t));
  }
  auto declare = [&](const onnx::ValueInfoProto& vi) -> Status {
    auto t = typeFromOnnx(vi.type(), "value '" + vi.name() + "'", symPrefix(vi.name()));
    if (t) {
      im.declare(vi.name(), *t);
    } else if (t.error().id == "bad-dim") {
      return makeError(t.error().id, t.error().message, path);
    }
    return okStatus();  // partially known types are not checked
  };
  for (const auto& vi : g.value_info()) SP_TRY(declare(vi));
  for (const auto& vi : g.output()) SP_TRY(declare(vi));
  for (int i = 0; i < g.node_size(); ++i) {
    im.setNode(&g.node(i), size_t(i));
    SP_TRY(mapNode(im));
  }
  for (const auto& o : g.output()) SP_TRY(im.addGraphOutput(o.name()));
  return okStatus();
}

int64_t defaultOpset(const onnx::ModelProto& m) {
  for (const auto& o : m.opset_import())
    if (o.domain().empty() || o.domain() == "ai.onnx") return o.version();
  return 0;
}

Result<ir::GraphBuilder> importBytesToBuilder(const std::string& bytes, const std::string& path,
                                              const OnnxOptions& opts) {
  std::string dir = fs::path(path).parent_path().string();
  if (dir.empty()) dir = ".";
  SP_ASSIGN(onnx::ModelProto model, parseAndCheck(bytes, path, dir));
  std::string name =
      model.graph().name().empty() ? fs::path(path).stem().string() : model.graph().name();
  ir::GraphBuilder b(name);
  Importer im(path, opts, defaultOpset(model), b);
  SP_TRY(walkGraph(model, im, path));
  return b;
}

}  // namespace

Result<ir::GraphBuilder> importOnnxToBuilder(const std::string& path, const OnnxOptions& opts) {
  SP_ASSIGN(std::string bytes, readFile(path));
  return importBytesToBuilder(bytes, path, opts);
}

std::string onnxContiguousGroup(int64_t size) { return "onnx_group" + std::to_string(size); }

Result<ir::Program> importOnnxProgram(const std::vector<std::string>& rankFiles, const OnnxOptions& opts) {
  int64_t world = int64_t(rankFiles.size());
  if (world == 0) return makeError("no-rank-files", "no per-rank onnx files");
  // Collectives name "world" or a contiguous group; their sizes are known
  // from the names, and the contiguous groups used are declared afterwards.
  auto used = std::make_shared<std::set<int64_t>>();
  OnnxOptions o = opts;
  o.worldSize = world;
  o.collectiveGroup = "world";
  o.groupSize = [world, used](const std::string& name) -> Result<int64_t> {
    if (name == "world") return world;
    for (int64_t g = 2; g < world; ++g)
      if (world % g == 0 && name == onnxContiguousGroup(g)) {
        used->insert(g);
        return g;
      }
    return makeError("onnx-group", "unknown process group '" + name + "'");
  };
  std::vector<ir::GraphBuilder> builders;
  for (int64_t r = 0; r < world; ++r) {
    o.rank = r;
    SP_ASSIGN(auto b, importOnnxToBuilder(rankFiles[size_t(r)], o));
    builders.push_back(std::move(b));
  }
  // One group size below the world (TP groups inside replicas, the common
  // case): a mesh [onnx_replica, onnx_group<g>], so relations can split over
  // the group axis. Several sizes: named partitions on the one axis "world".
  ir::Mesh mesh;
  if (used->size() == 1) {
    int64_t g = *used->begin();
    mesh.axes = {{"onnx_replica", world / g}, {onnxContiguousGroup(g), g}};
  }
  ir::ProgramBuilder pb(world, mesh);
  if (!mesh.axes.empty()) {
    std::vector<int64_t> all;
    for (int64_t r = 0; r < world; ++r) all.push_back(r);
    SP_TRY(pb.addGroup("world", {all}));
  } else {
    for (int64_t g : *used) {
      ir::GroupPartition part;
      for (int64_t k = 0; k < world / g; ++k) {
        part.emplace_back();
        for (int64_t i = 0; i < g; ++i) part.back().push_back(k * g + i);
      }
      SP_TRY(pb.addGroup(onnxContiguousGroup(g), std::move(part)));
    }
  }
  for (int64_t r = 0; r < world; ++r) {
    if (auto st = pb.setRank(r, std::move(builders[size_t(r)])); !st) {
      Error e = st.error();
      if (e.location.empty()) e.location = rankFiles[size_t(r)];
      return e;
    }
  }
  return std::move(pb).finish();
}

Result<ir::Graph> importOnnxBytes(const std::string& bytes, const std::string& name,
                                  const OnnxOptions& opts, const ir::GroupSizeFn* groupSize) {
  OnnxOptions o = opts;
  if (groupSize && !o.groupSize) o.groupSize = *groupSize;
  SP_ASSIGN(ir::GraphBuilder b, importBytesToBuilder(bytes, name, o));
  const ir::GroupSizeFn* gs = o.groupSize ? &o.groupSize : nullptr;
  return std::move(b).finish(gs);
}

Result<ir::Graph> importOnnxFile(const std::string& path, const OnnxOptions& opts,
                                 const ir::GroupSizeFn* groupSize) {
  SP_ASSIGN(std::string bytes, readFile(path));
  return importOnnxBytes(bytes, path, opts, groupSize);
}

Result<ir::Tensor> readOnnxTensor(const std::string& path) {
  SP_ASSIGN(std::string bytes, readFile(path));
  onnx::TensorProto t;
  if (!t.ParseFromString(bytes))
    return makeError("onnx-parse", "cannot parse an onnx TensorProto", path);
  std::string dir = fs::path(path).parent_path().string();
  SP_TRY(resolveExternal(t, dir.empty() ? "." : dir, path));
  auto r = tensorFromProto(t, "tensor '" + t.name() + "'");
  if (!r) return makeError(r.error().id, r.error().message, path);
  return r;
}

}  // namespace sp::frontend

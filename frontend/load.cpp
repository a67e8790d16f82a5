#include "frontend/load.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>

#include "frontend/fx_groups.h"
#include "frontend/fx_import.h"
#include "frontend/onnx_import.h"

namespace sp::frontend {

namespace fs = std::filesystem;

namespace {

Result<std::string> readText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return makeError("cannot-open", "cannot open '" + path + "'");
  std::stringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return makeError("cannot-read", "cannot read '" + path + "'");
  return ss.str();
}

std::string extensionOf(const std::string& path) {
  std::string ext = fs::path(path).extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  return ext;
}

bool isTextIr(const std::string& ext) { return ext == ".sp" || ext == ".spir" || ext == ".txt"; }

// Files named *.r<N>.<ext> in a directory, by rank.
Result<std::map<int64_t, std::string>> rankFiles(const std::string& dir) {
  static const std::regex kRankName(R"(.*\.r([0-9]+)\.([A-Za-z0-9]+)$)");
  std::map<int64_t, std::string> out;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (!entry.is_regular_file()) continue;
    std::string name = entry.path().filename().string();
    std::smatch m;
    if (!std::regex_match(name, m, kRankName)) continue;
    int64_t rank = std::stoll(m[1].str().substr(0, 9));
    auto [it, fresh] = out.emplace(rank, entry.path().string());
    if (!fresh)
      return makeError("duplicate-rank", "directory '" + dir + "' has two files for rank " +
                                             std::to_string(rank) + ": '" + it->second + "' and '" +
                                             entry.path().string() + "'");
  }
  if (ec) return makeError("cannot-open", "cannot list directory '" + dir + "': " + ec.message());
  if (out.empty())
    return makeError("no-rank-files", "directory '" + dir + "' has no per-rank files (*.r<N>.<ext>)");
  int64_t expect = 0;
  for (const auto& [rank, path] : out) {
    if (rank != expect)
      return makeError("missing-rank", "directory '" + dir + "' has no file for rank " +
                                           std::to_string(expect));
    ++expect;
  }
  return out;
}

Result<ir::Program> loadRankDirectory(const std::string& dir, const FxOptions& fx) {
  SP_ASSIGN(auto files, rankFiles(dir));
  std::string ext = extensionOf(files.begin()->second);
  for (const auto& [rank, path] : files)
    if (extensionOf(path) != ext)
      return makeError("mixed-formats", "directory '" + dir + "' mixes " + ext + " and " +
                                            extensionOf(path) + " rank files");
  std::vector<std::string> paths;
  for (const auto& [rank, path] : files) paths.push_back(path);
  if (ext == ".onnx") return importOnnxProgram(paths);
  if (ext == ".py") {
    if (paths.size() > 1) return importFxProgram(paths, fx);
    // One rank (a sequential capture): the mesh and rank lists describe the
    // distributed program given alongside it; here every group is this rank.
    FxOptions one = fx;
    one.mesh = {};
    one.namedGroups.clear();
    return importFxProgram(paths, one);
  }
  return makeError("unsupported-format", "directory '" + dir + "': per-rank " + ext +
                                             " files are not supported (use .onnx or .py rank "
                                             "files, or one text IR program file)");
}

}  // namespace

Result<ir::Module> loadModel(const std::string& path, const FxOptions& fx) {
  std::error_code ec;
  if (!fs::exists(path, ec)) return makeError("cannot-open", "'" + path + "' does not exist");
  if (fs::is_directory(path, ec)) {
    SP_ASSIGN(auto prog, loadRankDirectory(path, fx));
    return ir::Module(std::move(prog));
  }
  std::string ext = extensionOf(path);
  if (ext == ".onnx") {
    SP_ASSIGN(auto g, importOnnxFile(path));
    return ir::Module(std::move(g));
  }
  if (ext == ".py") {
    SP_ASSIGN(auto g, importFxGraph(path, fx));
    return ir::Module(std::move(g));
  }
  if (isTextIr(ext)) {
    SP_ASSIGN(auto text, readText(path));
    return ir::parseModule(text, path);
  }
  return makeError("unsupported-format", "'" + path + "': unknown model format '" + ext +
                                             "' (expected .onnx, .sp, a torch.fx capture .py, or a directory of rank "
                                             "files)");
}

Result<ir::Graph> loadGraph(const std::string& path, const FxOptions& fx) {
  SP_ASSIGN(auto m, loadModel(path, fx));
  if (auto* g = std::get_if<ir::Graph>(&m)) return std::move(*g);
  // A directory holding a single rank file is that rank's graph.
  auto& p = std::get<ir::Program>(m);
  if (p.worldSize() == 1) return ir::Graph(p.rank(0));
  return makeError("expected-graph", "'" + path + "' is a distributed program, expected a single graph");
}

Result<ir::Program> loadProgram(const std::string& path, const FxOptions& fx) {
  SP_ASSIGN(auto m, loadModel(path, fx));
  if (auto* p = std::get_if<ir::Program>(&m)) return std::move(*p);
  return makeError("expected-program", "'" + path + "' is a single graph, expected a distributed "
                                                    "program (a text IR program or a directory of "
                                                    "rank files)");
}

Result<FxOptions> fxOptionsFromFlags(const FxFlags& flags) {
  FxOptions o;
  if (!flags.mesh.empty()) SP_TRY(loadMeshFile(o, flags.mesh));
  for (const auto& g : flags.groups) {
    if (auto st = addGroupSpec(o, g); !st)
      return makeError(st.error().id, "--fx-group " + g + ": " + st.error().message);
  }
  for (const auto& c : flags.constants) {
    size_t eq = c.rfind('=');
    std::string key = eq == std::string::npos ? "" : c.substr(0, eq);
    std::string val = eq == std::string::npos ? "" : c.substr(eq + 1);
    char* end = nullptr;
    double v = val.empty() ? 0 : std::strtod(val.c_str(), &end);
    if (key.empty() || val.empty() || *end != '\0')
      return makeError("bad-args", "--fx-constant '" + c + "' must be [FILE:]NAME=NUMBER");
    if (!o.constantValues.emplace(key, v).second)
      return makeError("bad-args", "--fx-constant " + key + " is given twice");
  }
  for (const auto& d : flags.decomps) o.decompDirs.push_back(d);
  return o;
}

}  // namespace sp::frontend

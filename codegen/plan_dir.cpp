// Plan directories: manifest, text and JSON plans, param data.
#include "codegen/plan_dir.h"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "ir/npy.h"
#include "ir/text.h"

namespace sp::codegen {

namespace fs = std::filesystem;
using nlohmann::json;
using nlohmann::ordered_json;

namespace {

std::string planFile(size_t r) { return "r" + std::to_string(r) + ".plan"; }

Result<std::string> readText(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  if (!in) return makeError("cannot-open", "cannot open '" + p.string() + "'");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

Status writeText(const fs::path& p, const std::string& text) {
  std::ofstream out(p, std::ios::binary);
  out << text;
  out.close();
  if (!out) return makeError("cannot-write", "cannot write '" + p.string() + "'");
  return okStatus();
}

}  // namespace

std::string manifestJson(const std::vector<Plan>& plans, const ManifestInfo& info) {
  ordered_json j;
  j["format"] = "shardproof-plan-manifest";
  j["version"] = kPlanVersion;
  j["program"] = plans.empty() ? "" : plans[0].program;
  j["world"] = plans.size();
  j["bindings"] = ordered_json::object();
  if (!plans.empty())
    for (const auto& [n, v] : plans[0].bindings) j["bindings"][n] = v;
  j["verified"] = {{"seq", info.seq}, {"dist", info.dist}, {"verdict", info.verdict}, {"outputs", info.outputs}};
  j["ranks"] = ordered_json::array();
  for (size_t r = 0; r < plans.size(); ++r) {
    const Plan& p = plans[r];
    int64_t naive = 0;
    int counts[5] = {0, 0, 0, 0, 0};
    for (const PlanBuffer& b : p.buffers) naive += b.bytes;
    for (const PlanStep& s : p.steps) ++counts[int(s.kind)];
    j["ranks"].push_back({{"rank", r}, {"plan", planFile(r)}, {"json", planFile(r) + ".json"},
                          {"arena_bytes", p.arenaBytes}, {"buffer_bytes", naive}, {"buffers", p.buffers.size()},
                          {"kernels", counts[int(StepKind::Kernel)]}, {"collectives", counts[int(StepKind::Collective)]},
                          {"sends", counts[int(StepKind::Send)]}, {"recvs", counts[int(StepKind::Recv)]},
                          {"waits", counts[int(StepKind::Wait)]}});
  }
  return j.dump(1, ' ', false, ordered_json::error_handler_t::replace) + "\n";
}

Status writePlanDir(const std::string& dir, const std::vector<Plan>& plans, const ManifestInfo& info) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return makeError("cannot-write", "cannot create '" + dir + "': " + ec.message());
  for (size_t r = 0; r < plans.size(); ++r) {
    SP_TRY(writeText(fs::path(dir) / planFile(r), printPlanText(plans[r])));
    SP_TRY(writeText(fs::path(dir) / (planFile(r) + ".json"), printPlanJson(plans[r])));
    for (const PlanBuffer& b : plans[r].buffers) {
      if (b.dataFile.empty() || !b.data) continue;
      fs::path path = fs::path(dir) / b.dataFile;
      fs::create_directories(path.parent_path(), ec);
      if (ec) return makeError("cannot-write", "cannot create '" + path.parent_path().string() + "': " + ec.message());
      SP_TRY(ir::writeNpy(path.string(), *b.data));
    }
  }
  return writeText(fs::path(dir) / "manifest.json", manifestJson(plans, info));
}

Result<std::vector<Plan>> readPlanDir(const std::string& dir) {
  fs::path mpath = fs::path(dir) / "manifest.json";
  SP_ASSIGN(std::string text, readText(mpath));
  json m = json::parse(text, nullptr, false);
  std::string where = mpath.string();
  if (m.is_discarded() || !m.is_object()) return makeError("bad-plan", "not a JSON object", where);
  if (m.value("format", "") != "shardproof-plan-manifest")
    return makeError("bad-plan", "\"format\" is not \"shardproof-plan-manifest\"", where);
  auto ranks = m.find("ranks");
  if (ranks == m.end() || !ranks->is_array() || ranks->empty())
    return makeError("bad-plan", "\"ranks\" is not a non-empty array", where);
  std::vector<Plan> plans;
  for (size_t r = 0; r < ranks->size(); ++r) {
    const json& e = (*ranks)[r];
    if (!e.is_object() || !e.contains("plan") || !e["plan"].is_string())
      return makeError("bad-plan", "ranks[" + std::to_string(r) + "].plan is not a file name", where);
    std::string name = e["plan"].get<std::string>();
    if (name.empty() || name.find("..") != std::string::npos || name[0] == '/')
      return makeError("bad-plan", "ranks[" + std::to_string(r) + "].plan '" + name + "' is not a file in the plan directory", where);
    fs::path ppath = fs::path(dir) / name;
    SP_ASSIGN(std::string ptext, readText(ppath));
    SP_ASSIGN(Plan p, parsePlanText(ptext, ppath.string()));
    for (PlanBuffer& b : p.buffers) {
      if (b.dataFile.empty()) continue;
      if (b.dataFile.find("..") != std::string::npos || b.dataFile[0] == '/')
        return makeError("bad-plan", "data file '" + b.dataFile + "' of " + b.name + " is outside the plan directory", ppath.string());
      SP_ASSIGN(ir::Tensor t, ir::readNpy((fs::path(dir) / b.dataFile).string()));
      SP_ASSIGN(auto dims, concreteDims(b.type, p.bindings));
      if (t.dtype() != b.type.dtype || t.dims() != dims)
        return makeError("bad-plan", "data file '" + b.dataFile + "' holds " + t.type().str() + " but " + b.name +
                                         " is " + ir::formatType(b.type), ppath.string());
      b.data = std::move(t);
    }
    plans.push_back(std::move(p));
  }
  return plans;
}

}  // namespace sp::codegen

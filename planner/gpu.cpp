#include "planner/gpu.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace sp::planner {

std::string defaultGpuFile() { return std::string(SP_PLANNER_DIR) + "/gpus.json"; }

Result<std::map<std::string, GpuSpec>> loadGpuSpecs(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return makeError("gpu-file", "cannot read the GPU data file", path);
  std::stringstream ss;
  ss << in.rdbuf();
  auto j = nlohmann::json::parse(ss.str(), nullptr, false);
  if (j.is_discarded() || !j.is_object()) return makeError("gpu-file", "not a JSON object", path);
  std::map<std::string, GpuSpec> out;
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (!it.key().empty() && it.key()[0] == '_') continue;
    const auto& g = it.value();
    GpuSpec s;
    s.kind = it.key();
    auto num = [&](const char* k, double& dst) -> bool {
      auto f = g.find(k);
      if (f == g.end() || !f->is_number() || f->get<double>() <= 0) return false;
      dst = f->get<double>();
      return true;
    };
    double perNode = 0;
    bool ok = g.is_object() && num("bf16_tflops", s.peakTflops) && num("memory_gib", s.memoryGib) &&
              num("hbm_tb_s", s.hbmTBs) && num("nvlink_gb_s", s.nvlinkGBs) && num("ib_gb_s", s.ibGBs) &&
              num("gpus_per_node", perNode) && num("gemm_efficiency", s.gemmEff) &&
              num("attention_efficiency", s.attnEff) && num("hbm_efficiency", s.hbmEff) &&
              num("nvlink_efficiency", s.nvlinkEff) && num("ib_efficiency", s.ibEff);
    if (!ok) return makeError("gpu-file", "gpu '" + s.kind + "': a figure is missing or not positive", path);
    s.gpusPerNode = int(perNode);
    out[s.kind] = s;
  }
  return out;
}

Result<GpuSpec> findGpu(const std::string& kind, const std::string& path) {
  SP_ASSIGN(auto all, loadGpuSpecs(path));
  auto it = all.find(kind);
  if (it == all.end()) {
    std::string known;
    for (const auto& [k, _] : all) known += (known.empty() ? "" : ", ") + k;
    return makeError("gpu-unknown", "unknown gpu kind '" + kind + "' (known: " + known + ")");
  }
  return it->second;
}

}  // namespace sp::planner

#pragma once
// GPU kinds and their published figures, read from planner/gpus.json (the one
// place they are kept).
#include <map>
#include <string>

#include "ir/support.h"

namespace sp::planner {

struct GpuSpec {
  std::string kind;
  double peakTflops = 0;   // dense BF16
  double memoryGib = 0;
  double hbmTBs = 0;       // TB/s
  double nvlinkGBs = 0;    // per GPU, per direction
  double ibGBs = 0;        // per GPU, per direction
  int gpusPerNode = 8;
  double gemmEff = 0, attnEff = 0, hbmEff = 0, nvlinkEff = 0, ibEff = 0;
};

// The default data file: planner/gpus.json in the source tree.
std::string defaultGpuFile();
// Errors: "gpu-file" (unreadable or malformed), "gpu-unknown".
Result<std::map<std::string, GpuSpec>> loadGpuSpecs(const std::string& path);
Result<GpuSpec> findGpu(const std::string& kind, const std::string& path = defaultGpuFile());

}  // namespace sp::planner

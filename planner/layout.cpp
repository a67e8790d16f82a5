#include "planner/layout.h"

#include <charconv>
#include <sstream>

namespace sp::planner {

const char* recomputeName(Recompute r) {
  switch (r) {
    case Recompute::None: return "none";
    case Recompute::Selective: return "selective";
    case Recompute::Full: return "full";
  }
  return "?";
}

const char* pipeSplitName(PipeSplit s) {
  switch (s) {
    case PipeSplit::Even: return "even";
    case PipeSplit::EmbeddingLoss: return "embedding-loss";
    case PipeSplit::Uneven: return "uneven";
  }
  return "?";
}

Result<FixedChoices> parseFix(const std::string& text) {
  FixedChoices f;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item.empty()) continue;
    auto eq = item.find('=');
    if (eq == std::string::npos)
      return makeError("fix-parse", "'" + item + "' is not KEY=VALUE", "--fix");
    std::string k = item.substr(0, eq), v = item.substr(eq + 1);
    auto integer = [&](std::optional<int64_t>& dst) -> Status {
      int64_t x = 0;
      auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
      if (ec != std::errc() || p != v.data() + v.size() || x <= 0)
        return makeError("fix-parse", k + ": '" + v + "' is not a positive integer", "--fix");
      dst = x;
      return okStatus();
    };
    if (k == "tp") SP_TRY(integer(f.tp));
    else if (k == "pp") SP_TRY(integer(f.pp));
    else if (k == "vpp") SP_TRY(integer(f.vpp));
    else if (k == "cp") SP_TRY(integer(f.cp));
    else if (k == "ep") SP_TRY(integer(f.ep));
    else if (k == "etp") SP_TRY(integer(f.etp));
    else if (k == "dp") SP_TRY(integer(f.dp));
    else if (k == "mb" || k == "micro_batch") SP_TRY(integer(f.microBatch));
    else if (k == "recompute") {
      if (v == "none") f.recompute = Recompute::None;
      else if (v == "selective") f.recompute = Recompute::Selective;
      else if (v == "full") f.recompute = Recompute::Full;
      else return makeError("fix-parse", "recompute: '" + v + "' is not none, selective or full", "--fix");
    } else if (k == "distopt" || k == "distributed_optimizer") {
      if (v == "1" || v == "true" || v == "on") f.distributedOptimizer = true;
      else if (v == "0" || v == "false" || v == "off") f.distributedOptimizer = false;
      else return makeError("fix-parse", k + ": '" + v + "' is not true or false", "--fix");
    } else if (k == "split") {
      if (v == "even") f.split = PipeSplit::Even;
      else if (v == "embedding-loss") f.split = PipeSplit::EmbeddingLoss;
      else if (v == "uneven") f.split = PipeSplit::Uneven;
      else return makeError("fix-parse", "split: '" + v + "' is not even, embedding-loss or uneven", "--fix");
    } else {
      return makeError("fix-parse",
                       "unknown key '" + k +
                           "' (tp, pp, vpp, cp, ep, etp, dp, mb, recompute, distopt, split)",
                       "--fix");
    }
  }
  return f;
}

}  // namespace sp::planner

// Decomposition files (frontend/fx_decomp parseDecompFile) and their `${...}`
// expressions (fx_decomp_expr evalDecompExpr, over a few scalar arguments):
// any input is a value or an error, never a crash or a trap.
#include "frontend/fx_decomp.h"
#include "frontend/fx_decomp_expr.h"
#include "fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text = sp::fuzz::inputText(data, size);
  auto file = sp::frontend::fx::parseDecompFile(text, "fuzz.decomp");
  (void)file;
  static const sp::frontend::fx::DecompEnv env = [] {
    sp::frontend::fx::DecompEnv e;
    e.scalars["n"] = int64_t(4);
    e.scalars["big"] = int64_t(INT64_MAX);
    e.scalars["eps"] = 1e-5;
    e.scalars["normalized_shape"] = std::vector<int64_t>{2, 3};
    e.scalars["name"] = std::string("tp");
    e.group = [](const std::string& g) -> sp::Result<std::string> { return "\"" + g + "\""; };
    return e;
  }();
  auto v = sp::frontend::fx::evalDecompExpr(text, env);
  (void)v;
  return 0;
}

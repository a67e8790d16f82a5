// torch.fx captures (frontend/fx_parser + fx_import): the whole import of a
// `.py` capture text, with the shipped decompositions and constant sites.
#include "frontend/fx_import.h"
#include "fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const sp::frontend::FxOptions opts;
  auto g = sp::frontend::importFxText(sp::fuzz::inputText(data, size), "fuzz.py", opts);
  (void)g;
  return 0;
}

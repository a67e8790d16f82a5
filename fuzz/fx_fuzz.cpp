// torch.fx captures (frontend/fx_parser + fx_import): the whole import of a
// `.py` capture text, with the shipped decompositions and constant sites;
// each input is imported whole and, where it stops at a data-dependent
// size, partially (FxOptions::partial: the left-out statements and their
// outputs dropped).
#include "frontend/fx_import.h"
#include "fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const sp::frontend::FxOptions opts;
  const std::string text = sp::fuzz::inputText(data, size);
  auto g = sp::frontend::importFxText(text, "fuzz.py", opts);
  if (!g.ok() && g.error().id == "fx-data-dependent") {
    sp::frontend::FxPartial partial;
    sp::frontend::FxOptions popts = opts;
    popts.partial = &partial;
    auto p = sp::frontend::importFxText(text, "fuzz.py", popts);
    (void)p;
  }
  return 0;
}

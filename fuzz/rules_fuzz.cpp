// Lemma rule files (rewrite/lemma_parse parseLemmas): any input is a list
// of lemmas or an error, never a crash.
#include "fuzz/fuzz_input.h"
#include "rewrite/lemma/lemma.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto ls = sp::rewrite::parseLemmas(sp::fuzz::inputText(data, size), "fuzz.rules");
  (void)ls;
  return 0;
}

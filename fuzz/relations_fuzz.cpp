// Relation files (rewrite/relation_text parseRelations): any input is a
// relation file or an error, and a parsed file prints to text that parses.
#include "fuzz/fuzz_input.h"
#include "rewrite/relation/relation_text.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto f = sp::rewrite::parseRelations(sp::fuzz::inputText(data, size), "fuzz.rel");
  if (!f) return 0;
  std::string printed = sp::rewrite::printRelations(*f);
  auto again = sp::rewrite::parseRelations(printed, "printed.rel");
  if (!again) sp::fuzz::fail("printed relations do not parse", again.error().str() + "\n" + printed);
  return 0;
}

// Text IR (ir/text_parser): any input is a module or an error, and a module
// prints to text that parses back to the same text (docs/text-ir.md promises
// an exact round trip).
#include "fuzz/fuzz_input.h"
#include "ir/text.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto m = sp::ir::parseModule(sp::fuzz::inputText(data, size), "fuzz.sp");
  if (!m) return 0;
  std::string printed = sp::ir::printModule(*m);
  auto again = sp::ir::parseModule(printed, "printed.sp");
  if (!again) sp::fuzz::fail("printed module does not parse", again.error().str() + "\n" + printed);
  if (sp::ir::printModule(*again) != printed)
    sp::fuzz::fail("print(parse(print(m))) != print(m)", printed);
  return 0;
}

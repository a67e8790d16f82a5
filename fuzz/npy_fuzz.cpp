// NumPy files (ir/npy parseNpy): any input is a tensor or an error, and a
// tensor serializes to bytes that parse back.
#include "fuzz/fuzz_input.h"
#include "ir/npy.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto t = sp::ir::parseNpy(sp::fuzz::inputText(data, size), "fuzz.npy");
  if (!t) return 0;
  auto again = sp::ir::parseNpy(sp::ir::serializeNpy(*t), "serialized.npy");
  if (!again) sp::fuzz::fail("serialized tensor does not parse", again.error().str());
  return 0;
}

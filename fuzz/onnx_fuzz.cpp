// ONNX models (frontend/onnx_import importOnnxBytes): parse, checker, shape
// inference (in a forked child) and import of any bytes end in a graph or an
// error, never a crash of this process.
#include "frontend/onnx_import.h"
#include "fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto g = sp::frontend::importOnnxBytes(sp::fuzz::inputText(data, size), "fuzz.onnx");
  (void)g;
  return 0;
}

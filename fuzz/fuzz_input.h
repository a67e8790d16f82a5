#pragma once
// Shared by the libFuzzer harnesses: the input as a string, and a check that
// stays on in every build (a failed one is a crash the fuzzer reports).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace sp::fuzz {

inline std::string inputText(const uint8_t* data, size_t size) {
  return std::string(reinterpret_cast<const char*>(data), size);
}

// A property of the parser that does not hold for this input.
[[noreturn]] inline void fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "fuzz property violated: %s\n%s\n", what, detail.c_str());
  std::abort();
}

}  // namespace sp::fuzz

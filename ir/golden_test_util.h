#pragma once
// Golden files in tests: compare, or rewrite them under SP_UPDATE_GOLDEN=1.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace sp::test {

inline std::string readFile(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline bool updatingGolden() {
  const char* v = std::getenv("SP_UPDATE_GOLDEN");
  return v && *v && std::string(v) != "0";
}

// Compares `got` with the expected file, or rewrites it under SP_UPDATE_GOLDEN.
inline void checkGolden(const std::filesystem::path& expectedPath, const std::string& got) {
  if (updatingGolden()) {
    std::ofstream(expectedPath, std::ios::binary) << got;
    return;
  }
  ASSERT_TRUE(std::filesystem::exists(expectedPath)) << expectedPath << " is missing; run with SP_UPDATE_GOLDEN=1";
  EXPECT_EQ(readFile(expectedPath), got) << "golden mismatch: " << expectedPath;
}

}  // namespace sp::test

// codegen on the shared capture corpus (Megatron GPT, TP 2 and TP 4):
// verified, lowered, read back, verified again. Execution of the corpus is
// not tested here (the interpreter needs gigabytes at these sizes).
#include <gtest/gtest.h>

#include <filesystem>

#include "codegen/codegen.h"
#include "frontend/load.h"

namespace sp::codegen {
namespace {

namespace fs = std::filesystem;

}  // namespace
}  // namespace sp::codegen

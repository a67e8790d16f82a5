#include <gtest/gtest.h>

#include "frontend/fx_import.h"

namespace sp::frontend {
namespace {

TEST(FxParse, Placeholder) { SUCCEED(); }

}  // namespace
}  // namespace sp::frontend

#include "ir/compare.h"

#include <gtest/gtest.h>

#include <cmath>

namespace sp::ir {
namespace {

Tensor vec(std::vector<float> v) { return Tensor::fromFloats(DType::F32, {int64_t(v.size())}, v); }

TEST(TensorDiff, RelativeToReferenceMagnitude) {
  auto d = diffTensors(vec({1, 2, 4.5}), vec({1, 2, 4}));
  EXPECT_DOUBLE_EQ(d.maxAbsErr, 0.5);
  EXPECT_DOUBLE_EQ(d.maxRelErr, 0.125);
  EXPECT_EQ(diffTensors(vec({0, 0}), vec({0, 0})).maxRelErr, 0);
}

TEST(TensorDiff, ShapeAndNanMismatchesAreInfinite) {
  EXPECT_TRUE(std::isinf(diffTensors(vec({1, 2}), vec({1, 2, 3})).maxRelErr));
  EXPECT_TRUE(std::isinf(diffTensors(vec({NAN, 2}), vec({1, 2})).maxAbsErr));
  EXPECT_EQ(diffTensors(vec({NAN, 2}), vec({NAN, 2})).maxAbsErr, 0);
}

}  // namespace
}  // namespace sp::ir

#pragma once
// How far a tensor is from a reference: the one measure used by witnesses,
// numeric checks of test corpora and mutation testing.
#include "ir/tensor.h"

namespace sp::ir {

struct TensorDiff {
  double maxAbsErr = 0;
  // maxAbsErr relative to the largest magnitude of the reference
  // (elementwise relative errors blow up at values near zero); 0 when equal.
  double maxRelErr = 0;
};

// Infinite errors on a shape mismatch or where exactly one side is NaN.
TensorDiff diffTensors(const Tensor& got, const Tensor& want);

}  // namespace sp::ir

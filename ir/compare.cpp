#include "ir/compare.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace sp::ir {

TensorDiff diffTensors(const Tensor& got, const Tensor& want) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  TensorDiff e;
  if (got.dims() != want.dims()) return {kInf, kInf};
  double scale = 0;
  for (int64_t i = 0; i < want.numel(); ++i) {
    double a = got.getAsDouble(i), b = want.getAsDouble(i);
    if (std::isnan(a) != std::isnan(b)) return {kInf, kInf};
    if (std::isnan(a)) continue;
    scale = std::max(scale, std::fabs(b));
    e.maxAbsErr = std::max(e.maxAbsErr, std::fabs(a - b));
  }
  e.maxRelErr = e.maxAbsErr == 0 ? 0 : e.maxAbsErr / std::max(scale, 1e-30);
  return e;
}

}  // namespace sp::ir

#pragma once
// Helpers shared by the torch.fx importer tests.
#include <string>
#include <vector>

#include "ir/tensor.h"

namespace sp::frontend::fx_test {

inline const std::string kData = SP_SOURCE_DIR "/tests/data/fx/";

// A tensor of dtype t holding v (converted with the dtype's rounding).
inline ir::Tensor typed(ir::DType t, std::vector<int64_t> dims, const std::vector<double>& v) {
  ir::Tensor x(t, std::move(dims));
  for (size_t i = 0; i < v.size(); ++i) x.setFromDouble(int64_t(i), v[i]);
  return x;
}

inline std::vector<double> values(const ir::Tensor& t) {
  std::vector<double> v;
  for (int64_t i = 0; i < t.numel(); ++i) v.push_back(t.getAsDouble(i));
  return v;
}

}  // namespace sp::frontend::fx_test

#pragma once
// NumPy .npy files (format versions 1.0-3.0, little-endian, C order).
// f16 is numpy '<f2'; bf16 has no numpy dtype and is written as '<f4'.
#include <string>

#include "ir/tensor.h"

namespace sp::ir {

Result<Tensor> readNpy(const std::string& path);
Result<Tensor> parseNpy(const std::string& bytes, const std::string& what);
Status writeNpy(const std::string& path, const Tensor& t);
std::string serializeNpy(const Tensor& t);

}  // namespace sp::ir

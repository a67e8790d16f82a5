#pragma once
// NumPy .npy files (format versions 1.0-3.0, little-endian, C order).
// Supported dtypes: '<f4' '<f8' '<f2' '<i8' '<i4' '<i2' '|i1' '|u1' '|b1'
// (one-byte types are also accepted with '<'). f16 is numpy '<f2'; bf16 has
// no numpy dtype and is written as '<f4' (exact: every bf16 value is an f32).
// Reading never crashes on corrupt input; errors have the ids npy-io,
// npy-magic, npy-version, npy-header, npy-dtype, npy-fortran and npy-size.
// Writing uses version 1.0 (2.0 when the header does not fit in 64 KiB) and
// pads the header to a multiple of 64 bytes, as numpy does.
#include <string>

#include "ir/tensor.h"

namespace sp::ir {

Result<Tensor> readNpy(const std::string& path);
// `what` names the source in error messages (usually the path).
Result<Tensor> parseNpy(const std::string& bytes, const std::string& what);
Status writeNpy(const std::string& path, const Tensor& t);
std::string serializeNpy(const Tensor& t);

}  // namespace sp::ir

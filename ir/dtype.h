#pragma once
// Element types. f16 and bf16 are stored as 16-bit patterns with
// round-to-nearest-even conversion; arithmetic on them happens in f32.
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

namespace sp::ir {

enum class DType : uint8_t { F32, F64, F16, BF16, I64, I32, I16, I8, U8, Bool };

inline constexpr DType kAllDTypes[] = {DType::F32, DType::F64, DType::F16,
                                       DType::BF16, DType::I64, DType::I32,
                                       DType::I16, DType::I8, DType::U8,
                                       DType::Bool};

std::string_view dtypeName(DType t);                    // "f32", "bf16", "i64", "bool"
std::optional<DType> parseDType(std::string_view name);  // inverse of dtypeName
size_t dtypeSize(DType t);
bool isFloat(DType t);
bool isInteger(DType t);  // signed or unsigned integer, not bool

// IEEE half and bfloat16 conversions, round to nearest even, NaN preserved.
uint16_t floatToHalf(float f);
float halfToFloat(uint16_t h);
uint16_t floatToBF16(float f);
float bf16ToFloat(uint16_t b);

}  // namespace sp::ir

#include "ir/tensor.h"

#include <sys/mman.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <cstring>
#include <new>

namespace sp::ir {

namespace {

// Buffers from this size on are mapped directly; below it, the heap.
constexpr size_t kMapBytes = size_t(1) << 21;

// n zero bytes (at least one, so that storage is never null). Large
// buffers are fresh anonymous mappings: zeroed by the kernel, so no memset
// touches them before the kernel that fills them, and advised onto huge
// pages (a 2 GiB attention score tensor faults 1024 times, not 500 000).
std::shared_ptr<std::byte[]> zeroedStorage(size_t n) {
  if (n < kMapBytes) return std::shared_ptr<std::byte[]>(new std::byte[std::max<size_t>(n, 1)]());
  void* p = mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
#ifdef MADV_HUGEPAGE
  madvise(p, n, MADV_HUGEPAGE);  // advisory; ignored where unsupported
#endif
  return std::shared_ptr<std::byte[]>(static_cast<std::byte*>(p), [n](std::byte* q) { munmap(q, n); });
}

}  // namespace

std::string TensorType::str() const { return std::string(dtypeName(dtype)) + shapeStr(shape); }

Tensor::Tensor(DType dtype, std::vector<int64_t> dims) : dtype_(dtype), dims_(std::move(dims)) {
  numel_ = 1;
  for (int64_t d : dims_) {
    SP_ASSERT(d >= 0 && d <= kMaxElements, "tensor dim out of range");
    numel_ *= d;
    SP_ASSERT(numel_ <= kMaxElements, "tensor too large");
  }
  data_ = zeroedStorage(nbytes());
}

double Tensor::getAsDouble(int64_t i) const {
  switch (dtype_) {
    case DType::F32: return data<float>()[i];
    case DType::F64: return data<double>()[i];
    case DType::F16: return halfToFloat(data<uint16_t>()[i]);
    case DType::BF16: return bf16ToFloat(data<uint16_t>()[i]);
    case DType::I64: return double(data<int64_t>()[i]);
    case DType::I32: return data<int32_t>()[i];
    case DType::I16: return data<int16_t>()[i];
    case DType::I8: return data<int8_t>()[i];
    case DType::U8: return data<uint8_t>()[i];
    case DType::Bool: return data<uint8_t>()[i] ? 1.0 : 0.0;
  }
  return 0;
}

// Truncated toward zero and clamped to T's range (a double outside it made
// the conversion undefined: UBSan, -2 stored into a u8), NaN as 0.
template <typename T>
static T saturatingCast(double v) {
  if (std::isnan(v)) return T(0);
  double t = std::trunc(v);
  if (t <= double(std::numeric_limits<T>::min())) return std::numeric_limits<T>::min();
  // max() of i64 rounds up to 2^63 as a double: anything from there is out of range
  if (t >= double(std::numeric_limits<T>::max())) return std::numeric_limits<T>::max();
  return T(t);
}

void Tensor::setFromDouble(int64_t i, double v) {
  switch (dtype_) {
    case DType::F32: mutableData<float>()[i] = float(v); break;
    case DType::F64: mutableData<double>()[i] = v; break;
    case DType::F16: mutableData<uint16_t>()[i] = floatToHalf(float(v)); break;
    case DType::BF16: mutableData<uint16_t>()[i] = floatToBF16(float(v)); break;
    case DType::I64: mutableData<int64_t>()[i] = saturatingCast<int64_t>(v); break;
    case DType::I32: mutableData<int32_t>()[i] = saturatingCast<int32_t>(v); break;
    case DType::I16: mutableData<int16_t>()[i] = saturatingCast<int16_t>(v); break;
    case DType::I8: mutableData<int8_t>()[i] = saturatingCast<int8_t>(v); break;
    case DType::U8: mutableData<uint8_t>()[i] = saturatingCast<uint8_t>(v); break;
    case DType::Bool: mutableData<uint8_t>()[i] = v != 0.0; break;
  }
}

std::vector<float> Tensor::toFloatVector() const {
  std::vector<float> out(static_cast<size_t>(numel_));
  if (dtype_ == DType::F32) {
    if (numel_) std::memcpy(out.data(), raw(), nbytes());
    return out;
  }
  for (int64_t i = 0; i < numel_; ++i) out[size_t(i)] = float(getAsDouble(i));
  return out;
}

Tensor Tensor::fromFloats(DType dtype, std::vector<int64_t> dims, std::span<const float> v) {
  Tensor t(dtype, std::move(dims));
  SP_ASSERT(int64_t(v.size()) == t.numel(), "fromFloats size mismatch");
  if (dtype == DType::F32) {
    if (!v.empty()) std::memcpy(t.mutableRaw(), v.data(), t.nbytes());
    return t;
  }
  for (int64_t i = 0; i < t.numel(); ++i) t.setFromDouble(i, v[size_t(i)]);
  return t;
}

Tensor Tensor::scalar(DType dtype, double v) {
  Tensor t(dtype, {});
  t.setFromDouble(0, v);
  return t;
}

Tensor Tensor::view(DType dtype, std::vector<int64_t> dims, const std::shared_ptr<std::byte[]>& storage,
                    size_t capacity, size_t offset) {
  Tensor t;
  t.dtype_ = dtype;
  t.dims_ = std::move(dims);
  t.numel_ = 1;
  for (int64_t d : t.dims_) {
    SP_ASSERT(d >= 0 && d <= kMaxElements, "tensor dim out of range");
    t.numel_ *= d;
    SP_ASSERT(t.numel_ <= kMaxElements, "tensor too large");
  }
  SP_ASSERT(storage && offset <= capacity && t.nbytes() <= capacity - offset, "view outside its storage");
  t.data_ = std::shared_ptr<std::byte[]>(storage, storage.get() + offset);
  return t;
}

Tensor Tensor::reshaped(std::vector<int64_t> dims) const {
  Tensor t = *this;
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  SP_ASSERT(n == numel_, "reshape changes element count");
  t.dims_ = std::move(dims);
  return t;
}

Tensor Tensor::castTo(DType to) const {
  if (to == dtype_) return *this;
  Tensor t(to, dims_);
  for (int64_t i = 0; i < numel_; ++i) t.setFromDouble(i, getAsDouble(i));
  return t;
}

bool Tensor::identical(const Tensor& o) const {
  if (dtype_ != o.dtype_ || dims_ != o.dims_) return false;
  if (numel_ == 0) return true;
  return std::memcmp(raw(), o.raw(), nbytes()) == 0;
}

std::vector<int64_t> stridesOf(const std::vector<int64_t>& dims) {
  std::vector<int64_t> s(dims.size(), 1);
  for (int64_t i = int64_t(dims.size()) - 2; i >= 0; --i) s[size_t(i)] = s[size_t(i + 1)] * dims[size_t(i + 1)];
  return s;
}

}  // namespace sp::ir

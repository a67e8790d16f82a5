#pragma once
// Concrete tensors: dtype, concrete dims and contiguous row-major storage.
// Storage is shared and treated as immutable once a tensor is published.
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "ir/dtype.h"
#include "ir/shape.h"

namespace sp::ir {

struct TensorType {
  DType dtype = DType::F32;
  Shape shape;
  bool operator==(const TensorType& o) const { return dtype == o.dtype && shape == o.shape; }
  std::string str() const;  // "f32[8, seq, 768]"
};

class Tensor {
 public:
  Tensor() = default;
  // Zero-filled tensor; asserts dims are non-negative and within kMaxElements.
  Tensor(DType dtype, std::vector<int64_t> dims);

  DType dtype() const { return dtype_; }
  const std::vector<int64_t>& dims() const { return dims_; }
  int64_t rank() const { return int64_t(dims_.size()); }
  int64_t numel() const { return numel_; }
  size_t nbytes() const { return size_t(numel_) * dtypeSize(dtype_); }
  TensorType type() const { return {dtype_, shapeOf(dims_)}; }
  bool defined() const { return data_ != nullptr; }
  // Tensors (views from reshaped() included) sharing this one's storage,
  // itself counted; 0 when undefined. The interpreter writes an output into
  // a dying input's storage only when this is 1.
  long storageRefs() const { return data_.use_count(); }

  const std::byte* raw() const { return data_.get(); }
  std::byte* mutableRaw() { return data_.get(); }
  template <typename T> const T* data() const { return reinterpret_cast<const T*>(raw()); }
  template <typename T> T* mutableData() { return reinterpret_cast<T*>(mutableRaw()); }

  // Element i converted to double / stored from double (with f16/bf16
  // rounding, integer truncation toward zero, saturated to the integer range).
  double getAsDouble(int64_t i) const;
  void setFromDouble(int64_t i, double v);
  // Whole tensor as f32 / from f32 values (used by float kernels).
  std::vector<float> toFloatVector() const;
  static Tensor fromFloats(DType dtype, std::vector<int64_t> dims, std::span<const float> v);
  static Tensor scalar(DType dtype, double v);

  // A tensor over bytes [offset, offset + nbytes) of `storage`, which holds
  // `capacity` bytes (an executor's arena); the view keeps the storage
  // alive. Asserts that it fits.
  static Tensor view(DType dtype, std::vector<int64_t> dims, const std::shared_ptr<std::byte[]>& storage,
                     size_t capacity, size_t offset);

  Tensor reshaped(std::vector<int64_t> dims) const;  // shares storage; asserts numel
  Tensor castTo(DType to) const;
  // Bitwise equality of dtype, dims and bytes.
  bool identical(const Tensor& o) const;

 private:
  DType dtype_ = DType::F32;
  std::vector<int64_t> dims_;
  int64_t numel_ = 0;
  // Zero-filled storage: large buffers are fresh anonymous mappings (zeroed
  // by the kernel, backed by huge pages where the kernel allows), so a big
  // tensor costs no user-space memset and few page faults.
  std::shared_ptr<std::byte[]> data_;
};

std::vector<int64_t> stridesOf(const std::vector<int64_t>& dims);

}  // namespace sp::ir

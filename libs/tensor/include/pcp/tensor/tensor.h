// A dense, contiguous, row-major host tensor with shared, 64-byte-aligned storage.
//
//   Tensor t(DType::kF32, {2, 3});                 // zero-filled
//   t.data<float>()[0] = 1.0f;
//   Tensor u = Tensor::FromVector<float>({3}, {1, 2, 3});
//   Tensor s = Tensor::Scalar<float>(0.5f);
//   Tensor copy = t.Clone();                       // deep copy; plain copies share storage
//
// Copying a Tensor is cheap and aliases the same bytes (like a shared_ptr); call Clone()
// for an independent copy. data<T>() checks (debug builds) that T matches the dtype.
#ifndef PCP_TENSOR_TENSOR_H_
#define PCP_TENSOR_TENSOR_H_

#include <cassert>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "pcp/tensor/dtype.h"
#include "pcp/tensor/shape.h"

namespace pcp {

// Alignment of every tensor allocation, in bytes (a cache line; enough for AVX-512).
inline constexpr size_t kTensorAlignment = 64;
// Tensors of at least this size (x86-64's transparent huge page) start at a multiple of it
// (AdviseHugePages).
inline constexpr size_t kHugePageBytes = size_t{2} << 20;

// The C++ type stored for a dtype; f16/bf16 are stored as raw uint16_t bits.
template <typename T>
constexpr bool DTypeMatches(DType d) {
  if constexpr (std::is_same_v<T, float>) return d == DType::kF32;
  if constexpr (std::is_same_v<T, double>) return d == DType::kF64;
  if constexpr (std::is_same_v<T, uint16_t>) return d == DType::kF16 || d == DType::kBF16;
  if constexpr (std::is_same_v<T, int32_t>) return d == DType::kI32;
  if constexpr (std::is_same_v<T, int64_t>) return d == DType::kI64;
  if constexpr (std::is_same_v<T, bool> || std::is_same_v<T, uint8_t>) return d == DType::kBool;
  return false;
}

class Tensor {
 public:
  // An empty f32 scalar-less tensor (no storage); valid() is false.
  Tensor() = default;
  // Zero-filled tensor of the given dtype and shape.
  Tensor(DType dtype, Shape shape);

  template <typename T>
  static Tensor FromVector(Shape shape, const std::vector<T>& values);
  template <typename T>
  static Tensor Scalar(T value) {
    return FromVector<T>({}, std::vector<T>{value});
  }

  bool valid() const { return storage_ != nullptr; }
  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int64_t rank() const { return static_cast<int64_t>(shape_.size()); }
  int64_t num_elements() const { return NumElements(shape_); }
  int64_t byte_size() const { return num_elements() * SizeOf(dtype_); }

  void* raw_data() { return storage_.get(); }
  const void* raw_data() const { return storage_.get(); }
  template <typename T>
  T* data() {
    assert(DTypeMatches<T>(dtype_));
    return static_cast<T*>(raw_data());
  }
  template <typename T>
  const T* data() const {
    assert(DTypeMatches<T>(dtype_));
    return static_cast<const T*>(raw_data());
  }
  template <typename T>
  std::vector<T> ToVector() const {
    const T* p = data<T>();
    return std::vector<T>(p, p + num_elements());
  }

  // Deep copy with its own storage.
  Tensor Clone() const;
  // Same bytes viewed with another shape of equal element count (shares storage).
  Tensor Reshaped(Shape shape) const;
  // "f32[2x3]".
  std::string TypeString() const;

 private:
  DType dtype_ = DType::kF32;
  Shape shape_;
  std::shared_ptr<void> storage_;
};

// Bitwise equality of dtype, shape and bytes.
bool BitwiseEqual(const Tensor& a, const Tensor& b);

// The one value of a splat tensor, as a rank-0 tensor of its dtype, if every element of `t`
// is bitwise equal to the first; nullopt otherwise (and for invalid or empty tensors).
std::optional<Tensor> SplatValue(const Tensor& t);

// Asks the kernel to back `t`'s storage with transparent huge pages of 2 MiB (madvise
// MADV_HUGEPAGE; in THP mode "madvise", the hosts' default, only advised memory gets them):
// one TLB entry per 2 MiB instead of 512, for large tensors swept in full again and again
// (the shepherd's round sums; bench/results/rpc_stream.md, section rxfuse). Call before the
// storage is first written (pages touched before stay small). Contents are unchanged; only
// the whole 2 MiB pages inside the tensor are advised (its tail stays in small pages, so no
// memory past its end becomes resident). False where nothing was advised: a tensor below
// kHugePageBytes, a kernel without THP.
bool AdviseHugePages(const Tensor& t);
// The same for `bytes` of other memory starting at `data`, which must be kHugePageBytes-aligned
// (false otherwise): e.g. a backend's arena from aligned_alloc(kHugePageBytes, ...).
bool AdviseHugePages(void* data, size_t bytes);

template <typename T>
Tensor Tensor::FromVector(Shape shape, const std::vector<T>& values) {
  DType d;
  if constexpr (std::is_same_v<T, float>)
    d = DType::kF32;
  else if constexpr (std::is_same_v<T, double>)
    d = DType::kF64;
  else if constexpr (std::is_same_v<T, int32_t>)
    d = DType::kI32;
  else if constexpr (std::is_same_v<T, int64_t>)
    d = DType::kI64;
  else if constexpr (std::is_same_v<T, bool>)
    d = DType::kBool;
  else
    static_assert(sizeof(T) == 0, "use f32, f64, i32, i64 or bool");
  Tensor t(d, std::move(shape));
  assert(static_cast<int64_t>(values.size()) == t.num_elements());
  if constexpr (std::is_same_v<T, bool>) {
    auto* p = static_cast<uint8_t*>(t.raw_data());
    for (size_t i = 0; i < values.size(); ++i) p[i] = values[i] ? 1 : 0;
  } else {
    std::memcpy(t.raw_data(), values.data(), values.size() * sizeof(T));
  }
  return t;
}

}  // namespace pcp

#endif  // PCP_TENSOR_TENSOR_H_

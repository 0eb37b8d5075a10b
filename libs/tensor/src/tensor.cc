#include "pcp/tensor/tensor.h"

#include <sys/mman.h>

#include <cstdlib>
#include <cstring>
#include <new>

#include "absl/strings/str_cat.h"

namespace pcp {
namespace {

// Tensors from this size on are mapped straight from the kernel: their pages are zero until
// written (nothing is resident before) and go back to the kernel when the tensor is freed,
// whatever the heap's settings (pcp/rpc/stream_memory.h keeps freed heap blocks of up to
// 32 MiB for gRPC's buffers, which would otherwise keep a freed θ-sized tensor resident).
constexpr size_t kMapBytes = size_t{1} << 20;

std::shared_ptr<void> AllocateAligned(int64_t bytes) {
  // Round up: aligned_alloc requires a multiple of the alignment; never allocate 0 bytes.
  size_t size = (static_cast<size_t>(bytes) + kTensorAlignment - 1) / kTensorAlignment * kTensorAlignment;
  if (size == 0) size = kTensorAlignment;
  if (size >= kMapBytes) {
    void* m = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) throw std::bad_alloc();
    return std::shared_ptr<void>(m, [size](void* q) { ::munmap(q, size); });
  }
  void* p = std::aligned_alloc(kTensorAlignment, size);
  if (p == nullptr) throw std::bad_alloc();
  std::memset(p, 0, size);
  return std::shared_ptr<void>(p, [](void* q) { std::free(q); });
}

}  // namespace

Tensor::Tensor(DType dtype, Shape shape)
    : dtype_(dtype), shape_(std::move(shape)), storage_(AllocateAligned(byte_size())) {}

Tensor Tensor::Clone() const {
  if (!valid()) return Tensor();
  Tensor t(dtype_, shape_);
  std::memcpy(t.raw_data(), raw_data(), byte_size());
  return t;
}

Tensor Tensor::Reshaped(Shape shape) const {
  assert(NumElements(shape) == num_elements());
  Tensor t = *this;
  t.shape_ = std::move(shape);
  return t;
}

std::string Tensor::TypeString() const {
  return absl::StrCat(MlirName(dtype_), "[", ShapeToString(shape_), "]");
}

bool BitwiseEqual(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || a.shape() != b.shape()) return false;
  return std::memcmp(a.raw_data(), b.raw_data(), a.byte_size()) == 0;
}

}  // namespace pcp

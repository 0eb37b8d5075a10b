#include "pcp/tensor/tensor.h"

#include <sys/mman.h>

#include <cstdint>
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

// The bytes mapped for a mapped tensor of `size` bytes: whole 4 KiB pages.
size_t MappedBytes(size_t size) { return (size + 4095) / 4096 * 4096; }

// Maps MappedBytes(size) zeroed bytes; from kHugePageBytes on starting at a multiple of it, so
// that huge pages can back the tensor's whole 2 MiB pages if advised (AdviseHugePages).
void* MapZeroed(size_t size) {
  const size_t mapped = MappedBytes(size);
  const size_t slack = size >= kHugePageBytes ? kHugePageBytes : 0;
  void* m = ::mmap(nullptr, mapped + slack, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (m == MAP_FAILED) throw std::bad_alloc();
  if (slack == 0) return m;
  const uintptr_t at = reinterpret_cast<uintptr_t>(m);
  const uintptr_t aligned = (at + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
  if (aligned > at) ::munmap(m, aligned - at);
  if (const size_t tail = at + slack - aligned; tail > 0) ::munmap(reinterpret_cast<void*>(aligned + mapped), tail);
  return reinterpret_cast<void*>(aligned);
}

// Rounded up: aligned_alloc requires a multiple of the alignment; never 0 bytes.
size_t AllocatedBytes(int64_t bytes) {
  const size_t size = (static_cast<size_t>(bytes) + kTensorAlignment - 1) / kTensorAlignment * kTensorAlignment;
  return size == 0 ? kTensorAlignment : size;
}

std::shared_ptr<void> AllocateAligned(int64_t bytes) {
  const size_t size = AllocatedBytes(bytes);
  if (size >= kMapBytes) {
    const size_t mapped = MappedBytes(size);
    return std::shared_ptr<void>(MapZeroed(size), [mapped](void* q) { ::munmap(q, mapped); });
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

std::string Tensor::TypeString() const { return absl::StrCat(MlirName(dtype_), "[", ShapeToString(shape_), "]"); }

bool AdviseHugePages(void* data, size_t bytes) {
  // Only the whole huge pages inside the memory: a huge page over its tail would make up to
  // 2 MiB resident that nothing uses (the shepherd's memory goal counts it).
  const size_t advised = bytes / kHugePageBytes * kHugePageBytes;
  if (data == nullptr || advised == 0 || reinterpret_cast<uintptr_t>(data) % kHugePageBytes != 0) return false;
  return ::madvise(data, advised, MADV_HUGEPAGE) == 0;
}

bool AdviseHugePages(const Tensor& t) {
  // Mapped by MapZeroed from a huge page boundary when at least kHugePageBytes.
  return t.valid() && AdviseHugePages(const_cast<void*>(t.raw_data()), AllocatedBytes(t.byte_size()));
}

bool BitwiseEqual(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || a.shape() != b.shape()) return false;
  return std::memcmp(a.raw_data(), b.raw_data(), a.byte_size()) == 0;
}

std::optional<Tensor> SplatValue(const Tensor& t) {
  if (!t.valid() || t.num_elements() == 0) return std::nullopt;
  const auto size = static_cast<size_t>(SizeOf(t.dtype()));
  const auto* p = static_cast<const uint8_t*>(t.raw_data());
  for (int64_t i = 1; i < t.num_elements(); ++i) {
    if (std::memcmp(p, p + static_cast<size_t>(i) * size, size) != 0) return std::nullopt;
  }
  Tensor scalar(t.dtype(), {});
  std::memcpy(scalar.raw_data(), p, size);
  return scalar;
}

}  // namespace pcp

#include "movement_kernels.h"

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "thread_pool.h"

namespace pcp::cpu {
namespace {

int64_t LoadIndex(const uint8_t* indices, DType type, int64_t i) {
  return type == DType::kI32 ? reinterpret_cast<const int32_t*>(indices)[i]
                             : reinterpret_cast<const int64_t*>(indices)[i];
}

}  // namespace

CopyKernel::CopyKernel(Access source, int out_storage, int64_t elem_size, std::string description)
    : source_(std::move(source)),
      out_storage_(out_storage),
      elem_size_(elem_size),
      description_(std::move(description)) {
  kind = Kind::kCopy;
  reads.push_back(source_.storage);
  writes.push_back(out_storage_);
  // Element i of the output comes from element i of a contiguous source: safe in place.
  if (source_.layout.offset == 0 && source_.layout.IsContiguous()) {
    same_index_reads.push_back(source_.storage);
    same_index_writes.push_back(out_storage_);
  }
}

void CopyKernel::Run(const KernelContext& ctx) {
  StridedCopy(ctx.storage[out_storage_], Layout::Contiguous(source_.layout.shape), ctx.storage[source_.storage],
              source_.layout, elem_size_, ctx.pool);
}

ConcatenateKernel::ConcatenateKernel(std::vector<Access> operands, int64_t dimension, const Shape& result_shape,
                                     int out_storage, int64_t elem_size, std::string description)
    : operands_(std::move(operands)),
      out_storage_(out_storage),
      elem_size_(elem_size),
      description_(std::move(description)) {
  kind = Kind::kCopy;
  num_instructions = 1;
  const Layout out = Layout::Contiguous(result_shape);
  int64_t position = 0;
  for (const Access& a : operands_) {
    Layout d = out;
    d.shape = a.layout.shape;
    d.offset = position * out.strides[dimension];
    position += a.layout.shape[dimension];
    destinations_.push_back(std::move(d));
    reads.push_back(a.storage);
  }
  writes.push_back(out_storage_);
}

void ConcatenateKernel::Run(const KernelContext& ctx) {
  for (size_t i = 0; i < operands_.size(); ++i) {
    StridedCopy(ctx.storage[out_storage_], destinations_[i], ctx.storage[operands_[i].storage], operands_[i].layout,
                elem_size_, ctx.pool);
  }
}

GatherKernel::GatherKernel(Access table, int64_t rows, int64_t row_elems, int64_t elem_size, Access indices,
                           DType index_type, int64_t num_indices, int out_storage, std::string description)
    : table_(std::move(table)),
      indices_(std::move(indices)),
      rows_(rows),
      row_bytes_(row_elems * elem_size),
      elem_size_(elem_size),
      num_indices_(num_indices),
      index_type_(index_type),
      out_storage_(out_storage),
      description_(std::move(description)) {
  num_instructions = 1;
  reads = {table_.storage, indices_.storage};
  writes = {out_storage_};
}

void GatherKernel::Run(const KernelContext& ctx) {
  if (rows_ == 0 || row_bytes_ == 0) return;  // lowering rejects gathers from empty tables
  const int64_t index_size = SizeOf(index_type_);
  const uint8_t* table = ctx.storage[table_.storage] + table_.layout.offset * elem_size_;
  const uint8_t* indices = ctx.storage[indices_.storage] + indices_.layout.offset * index_size;
  uint8_t* out = ctx.storage[out_storage_];
  auto run = [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const int64_t row = std::clamp<int64_t>(LoadIndex(indices, index_type_, i), 0, rows_ - 1);
      std::memcpy(out + i * row_bytes_, table + row * row_bytes_, static_cast<size_t>(row_bytes_));
    }
  };
  const int threads = ctx.pool->num_threads();
  if (threads > 1 && num_indices_ * row_bytes_ >= (1 << 17)) {
    const int64_t units = std::min<int64_t>(num_indices_, 4 * threads);
    ctx.pool->ParallelFor(units,
                          [&](int64_t u, int) { run(num_indices_ * u / units, num_indices_ * (u + 1) / units); });
  } else {
    run(0, num_indices_);
  }
}

ScatterKernel::ScatterKernel(Access operand, Access indices, DType index_type, Access updates, DType dtype,
                             int64_t rows, int64_t row_size, int64_t num_indices, int out_storage,
                             std::string description)
    : operand_(std::move(operand)),
      indices_(std::move(indices)),
      updates_(std::move(updates)),
      index_type_(index_type),
      dtype_(dtype),
      rows_(rows),
      row_size_(row_size),
      num_indices_(num_indices),
      out_storage_(out_storage),
      description_(std::move(description)) {
  num_instructions = 1;
  reads = {operand_.storage, indices_.storage, updates_.storage};
  writes = {out_storage_};
}

template <typename T>
void ScatterKernel::AddRows(const KernelContext& ctx, T* out) const {
  const uint8_t* indices = ctx.storage[indices_.storage] + indices_.layout.offset * SizeOf(index_type_);
  const T* updates = reinterpret_cast<const T*>(ctx.storage[updates_.storage]) + updates_.layout.offset;
  // Each unit owns a range of columns and adds every update row to it in index order, so
  // repeated indices accumulate in the same order for every thread count.
  auto run = [&](int64_t j0, int64_t j1) {
    for (int64_t i = 0; i < num_indices_; ++i) {
      const int64_t row = LoadIndex(indices, index_type_, i);
      if (row < 0 || row >= rows_) continue;
      T* __restrict dst = out + row * row_size_;
      const T* src = updates + i * row_size_;
      for (int64_t j = j0; j < j1; ++j) {
        if constexpr (std::is_integral_v<T>) {
          using U = std::make_unsigned_t<T>;
          dst[j] = static_cast<T>(static_cast<U>(dst[j]) + static_cast<U>(src[j]));
        } else {
          dst[j] += src[j];
        }
      }
    }
  };
  const int threads = ctx.pool->num_threads();
  if (threads > 1 && num_indices_ * row_size_ >= (1 << 15) && row_size_ >= 32) {
    const int64_t units = std::min<int64_t>(row_size_ / 16, 4 * threads);
    ctx.pool->ParallelFor(units, [&](int64_t u, int) { run(row_size_ * u / units, row_size_ * (u + 1) / units); });
  } else {
    run(0, row_size_);
  }
}

void ScatterKernel::Run(const KernelContext& ctx) {
  const int64_t elem_size = SizeOf(dtype_);
  uint8_t* out = ctx.storage[out_storage_];
  StridedCopy(out, Layout::Contiguous(operand_.layout.shape), ctx.storage[operand_.storage], operand_.layout, elem_size,
              ctx.pool);
  if (row_size_ == 0) return;
  switch (dtype_) {
    case DType::kF32: return AddRows(ctx, reinterpret_cast<float*>(out));
    case DType::kI32: return AddRows(ctx, reinterpret_cast<int32_t*>(out));
    default: return AddRows(ctx, reinterpret_cast<int64_t*>(out));
  }
}

}  // namespace pcp::cpu

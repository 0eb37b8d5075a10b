// Strided views of a buffer: how broadcast_in_dim, transpose, slice and (where it can)
// reshape become free, and the loops that read or copy through a view.
//
// A Layout maps a row-major multi-index i of `shape` to the element offset + sum(i[d] *
// strides[d]) of its buffer. Strides may be 0 (broadcast) and need not be sorted (transpose).
#ifndef PCP_KERNELS_CPU_LAYOUT_H_
#define PCP_KERNELS_CPU_LAYOUT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "pcp/tensor/shape.h"

namespace pcp::cpu {

class ThreadPool;

struct Layout {
  int64_t offset = 0;
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;

  static Layout Contiguous(const Shape& shape, int64_t offset = 0);
  int64_t num_elements() const { return NumElements(shape); }
  // Row-major without gaps (size-1 dimensions may have any stride).
  bool IsContiguous() const;
  // Every element reads the same address.
  bool IsBroadcastScalar() const;
  std::string ToString() const;
  friend bool operator==(const Layout&, const Layout&) = default;
};

// The same elements in the same row-major order with size-1 dimensions dropped and adjacent
// dimensions merged where their strides allow: what loops over a linear index need.
Layout Simplify(const Layout& layout);

// The same elements in the same row-major order, viewed as `shape` (same element count),
// or nullopt if that is not expressible with strides (then the view must be copied first).
std::optional<Layout> ReshapeLayout(const Layout& layout, const Shape& shape);

// Views of the result of an op on an operand viewed through `operand`.
Layout BroadcastLayout(const Layout& operand, const Shape& result_shape,
                       const std::vector<int64_t>& broadcast_dimensions);
Layout TransposeLayout(const Layout& operand, const std::vector<int64_t>& permutation);
Layout SliceLayout(const Layout& operand, const std::vector<int64_t>& start, const std::vector<int64_t>& stride,
                   const Shape& result_shape);

// Copies elements [start, start + n) (row-major order of `layout`) of the view into `dst`.
// `layout` should be simplified. elem_size is 1, 2, 4 or 8.
void ReadLinear(const void* base, const Layout& layout, int64_t elem_size, int64_t start, int64_t n, void* dst);

// dst[view dst_layout] = src[view src_layout] for two views of the same shape (the dst view
// must not write an address twice). Splits rows over `pool` when it is worth it.
void StridedCopy(void* dst, const Layout& dst_layout, const void* src, const Layout& src_layout, int64_t elem_size,
                 ThreadPool* pool);

}  // namespace pcp::cpu

#endif  // PCP_KERNELS_CPU_LAYOUT_H_

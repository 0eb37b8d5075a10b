#include "layout.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "thread_pool.h"

namespace pcp::cpu {

Layout Layout::Contiguous(const Shape& shape, int64_t offset) { return Layout{offset, shape, RowMajorStrides(shape)}; }

bool Layout::IsContiguous() const {
  int64_t expected = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    if (shape[d] == 1) continue;
    if (strides[d] != expected) return false;
    expected *= shape[d];
  }
  return true;
}

bool Layout::IsBroadcastScalar() const {
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] != 1 && strides[d] != 0) return false;
  }
  return true;
}

std::string Layout::ToString() const {
  return absl::StrCat("+", offset, "[", absl::StrJoin(shape, "x"), ":", absl::StrJoin(strides, ","), "]");
}

Layout Simplify(const Layout& layout) {
  Layout out;
  out.offset = layout.offset;
  if (layout.num_elements() == 0) {
    out.shape = {0};
    out.strides = {1};
    return out;
  }
  for (size_t d = 0; d < layout.shape.size(); ++d) {
    if (layout.shape[d] == 1) continue;
    if (!out.shape.empty() && out.strides.back() == layout.strides[d] * layout.shape[d]) {
      out.shape.back() *= layout.shape[d];
      out.strides.back() = layout.strides[d];
    } else {
      out.shape.push_back(layout.shape[d]);
      out.strides.push_back(layout.strides[d]);
    }
  }
  return out;
}

std::optional<Layout> ReshapeLayout(const Layout& layout, const Shape& shape) {
  const int64_t n = NumElements(shape);
  if (n != layout.num_elements()) return std::nullopt;
  if (n == 0 || layout.IsContiguous()) return Layout::Contiguous(shape, layout.offset);
  // Match groups of old and new dimensions with equal products; each old group must be
  // mergeable into one stride, which is then split over the new group (numpy's rule).
  const Layout old = Simplify(layout);
  std::vector<int64_t> new_dims, new_index;  // dimensions of `shape` that are not 1
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] != 1) {
      new_dims.push_back(shape[d]);
      new_index.push_back(static_cast<int64_t>(d));
    }
  }
  Layout out{layout.offset, shape, std::vector<int64_t>(shape.size(), 0)};
  size_t oi = 0, ni = 0;
  while (oi < old.shape.size() && ni < new_dims.size()) {
    int64_t op = old.shape[oi], np = new_dims[ni];
    size_t oj = oi + 1, nj = ni + 1;
    while (op != np) {
      if (np < op) {
        if (nj >= new_dims.size()) return std::nullopt;
        np *= new_dims[nj++];
      } else {
        if (oj >= old.shape.size()) return std::nullopt;
        op *= old.shape[oj++];
      }
    }
    for (size_t k = oi; k + 1 < oj; ++k) {
      if (old.strides[k] != old.shape[k + 1] * old.strides[k + 1]) return std::nullopt;
    }
    int64_t stride = old.strides[oj - 1];
    for (size_t k = nj; k-- > ni;) {
      out.strides[new_index[k]] = stride;
      stride *= new_dims[k];
    }
    oi = oj;
    ni = nj;
  }
  if (oi != old.shape.size() || ni != new_dims.size()) return std::nullopt;
  return out;
}

Layout BroadcastLayout(const Layout& operand, const Shape& result_shape,
                       const std::vector<int64_t>& broadcast_dimensions) {
  Layout out{operand.offset, result_shape, std::vector<int64_t>(result_shape.size(), 0)};
  for (size_t i = 0; i < broadcast_dimensions.size(); ++i) {
    if (operand.shape[i] != 1) out.strides[broadcast_dimensions[i]] = operand.strides[i];
  }
  return out;
}

Layout TransposeLayout(const Layout& operand, const std::vector<int64_t>& permutation) {
  Layout out{operand.offset, {}, {}};
  for (int64_t p : permutation) {
    out.shape.push_back(operand.shape[p]);
    out.strides.push_back(operand.strides[p]);
  }
  return out;
}

Layout SliceLayout(const Layout& operand, const std::vector<int64_t>& start, const std::vector<int64_t>& stride,
                   const Shape& result_shape) {
  Layout out{operand.offset, result_shape, {}};
  for (size_t d = 0; d < start.size(); ++d) {
    out.offset += start[d] * operand.strides[d];
    out.strides.push_back(stride[d] * operand.strides[d]);
  }
  return out;
}

namespace {

template <typename T>
void ReadLinearT(const T* base, const Layout& l, int64_t start, int64_t n, T* dst) {
  const size_t rank = l.shape.size();
  if (rank == 0) {
    std::fill(dst, dst + n, base[l.offset]);
    return;
  }
  if (rank == 2) {
    // The common case (row and column broadcasts, 2-d transposes) without the odometer.
    const int64_t inner = l.shape[1], s0 = l.strides[0], s1 = l.strides[1];
    int64_t i = start / inner, j = start % inner;
    while (n > 0) {
      const int64_t run = std::min(n, inner - j);
      const T* src = base + l.offset + i * s0 + j * s1;
      if (s1 == 1) {
        std::memcpy(dst, src, static_cast<size_t>(run) * sizeof(T));
      } else if (s1 == 0) {
        std::fill(dst, dst + run, *src);
      } else {
        for (int64_t k = 0; k < run; ++k) dst[k] = src[k * s1];
      }
      dst += run;
      n -= run;
      ++i;
      j = 0;
    }
    return;
  }
  // Multi-index of `start`, then runs along the innermost dimension.
  int64_t index[16];
  int64_t rest = start, offset = l.offset;
  for (size_t d = rank; d-- > 0;) {
    index[d] = rest % l.shape[d];
    rest /= l.shape[d];
    offset += index[d] * l.strides[d];
  }
  const int64_t inner = l.shape[rank - 1], inner_stride = l.strides[rank - 1];
  while (n > 0) {
    const int64_t run = std::min(n, inner - index[rank - 1]);
    const T* src = base + offset;
    if (inner_stride == 1) {
      std::memcpy(dst, src, static_cast<size_t>(run) * sizeof(T));
    } else if (inner_stride == 0) {
      std::fill(dst, dst + run, *src);
    } else {
      for (int64_t i = 0; i < run; ++i) dst[i] = src[i * inner_stride];
    }
    dst += run;
    n -= run;
    if (n == 0) break;
    // Advance the odometer to the start of the next run.
    offset += (run - 1) * inner_stride;
    index[rank - 1] += run - 1;
    for (size_t d = rank; d-- > 0;) {
      if (++index[d] < l.shape[d]) {
        offset += l.strides[d];
        break;
      }
      offset -= (l.shape[d] - 1) * l.strides[d];
      index[d] = 0;
    }
  }
}

template <typename T>
void CopyRows(T* dst, const Layout& dl, const T* src, const Layout& sl, int64_t row_begin, int64_t row_end) {
  // Layouts have rank >= 1; rows are the multi-indices of all but the last dimension.
  const size_t rank = dl.shape.size();
  const int64_t inner = dl.shape[rank - 1];
  const int64_t ds = dl.strides[rank - 1], ss = sl.strides[rank - 1];
  int64_t index[16];
  for (int64_t row = row_begin; row < row_end; ++row) {
    int64_t rest = row, doff = dl.offset, soff = sl.offset;
    for (size_t d = rank - 1; d-- > 0;) {
      index[d] = rest % dl.shape[d];
      rest /= dl.shape[d];
      doff += index[d] * dl.strides[d];
      soff += index[d] * sl.strides[d];
    }
    T* out = dst + doff;
    const T* in = src + soff;
    if (ds == 1 && ss == 1) {
      if (out != in) std::memmove(out, in, static_cast<size_t>(inner) * sizeof(T));
    } else if (ds == 1 && ss == 0) {
      std::fill(out, out + inner, *in);
    } else {
      for (int64_t i = 0; i < inner; ++i) out[i * ds] = in[i * ss];
    }
  }
}

// Square tiles for a copy whose source walks the destination's inner dimension with a large
// stride (a transpose): reading and writing 32x32 tiles keeps both sides in cache lines.
template <typename T>
bool TryTiledTranspose(T* dst, const Layout& dl, const T* src, const Layout& sl, ThreadPool* pool) {
  const size_t rank = dl.shape.size();
  if (rank < 2 || dl.strides[rank - 1] != 1 || sl.strides[rank - 1] == 1) return false;
  // The source's unit-stride dimension must be another dimension p of the view.
  size_t p = rank;
  for (size_t d = 0; d + 1 < rank; ++d) {
    if (sl.strides[d] == 1 && dl.shape[d] > 1) p = d;
  }
  if (p == rank || dl.shape[p] < 8 || dl.shape[rank - 1] < 8) return false;
  constexpr int64_t kTile = 32;
  const int64_t rows = dl.shape[p], cols = dl.shape[rank - 1];
  const int64_t row_tiles = (rows + kTile - 1) / kTile, col_tiles = (cols + kTile - 1) / kTile;
  // The remaining dimensions form the outer loop.
  int64_t outer = 1;
  for (size_t d = 0; d + 1 < rank; ++d) {
    if (d != p) outer *= dl.shape[d];
  }
  const int64_t units = outer * row_tiles;
  auto run = [&](int64_t unit, int) {
    const int64_t o = unit / row_tiles, rt = unit % row_tiles;
    int64_t rest = o, doff = dl.offset, soff = sl.offset;
    for (size_t d = rank - 1; d-- > 0;) {
      if (d == p) continue;
      const int64_t i = rest % dl.shape[d];
      rest /= dl.shape[d];
      doff += i * dl.strides[d];
      soff += i * sl.strides[d];
    }
    const int64_t r0 = rt * kTile, r1 = std::min(rows, r0 + kTile);
    const int64_t dps = dl.strides[p], scs = sl.strides[rank - 1];
    for (int64_t ct = 0; ct < col_tiles; ++ct) {
      const int64_t c0 = ct * kTile, c1 = std::min(cols, c0 + kTile);
      for (int64_t r = r0; r < r1; ++r) {
        T* out = dst + doff + r * dps;
        const T* in = src + soff + r;  // source stride along p is 1
        for (int64_t c = c0; c < c1; ++c) out[c] = in[c * scs];
      }
    }
  };
  if (pool != nullptr && units > 1 && NumElements(dl.shape) >= (1 << 15)) {
    pool->ParallelFor(units, run);
  } else {
    for (int64_t u = 0; u < units; ++u) run(u, 0);
  }
  return true;
}

template <typename T>
void StridedCopyT(T* dst, const Layout& dst_layout, const T* src, const Layout& src_layout, ThreadPool* pool) {
  // Drop size-1 dimensions and merge dimensions that are adjacent in both views.
  Layout dl{dst_layout.offset, {}, {}}, sl{src_layout.offset, {}, {}};
  for (size_t d = 0; d < dst_layout.shape.size(); ++d) {
    const int64_t size = dst_layout.shape[d];
    if (size == 0) return;
    if (size == 1) continue;
    if (!dl.shape.empty() && dl.strides.back() == dst_layout.strides[d] * size &&
        sl.strides.back() == src_layout.strides[d] * size) {
      dl.shape.back() *= size;
      sl.shape.back() *= size;
      dl.strides.back() = dst_layout.strides[d];
      sl.strides.back() = src_layout.strides[d];
    } else {
      dl.shape.push_back(size);
      sl.shape.push_back(size);
      dl.strides.push_back(dst_layout.strides[d]);
      sl.strides.push_back(src_layout.strides[d]);
    }
  }
  if (dl.shape.empty()) {
    dl.shape = sl.shape = {1};
    dl.strides = sl.strides = {1};
  }
  if (TryTiledTranspose(dst, dl, src, sl, pool)) return;
  const int64_t inner = dl.shape.back();
  const int64_t rows = NumElements(dl.shape) / inner;
  if (pool != nullptr && rows > 1 && rows * inner >= (1 << 15)) {
    const int64_t units = std::min<int64_t>(rows, 4 * pool->num_threads());
    pool->ParallelFor(units,
                      [&](int64_t u, int) { CopyRows(dst, dl, src, sl, rows * u / units, rows * (u + 1) / units); });
  } else {
    CopyRows(dst, dl, src, sl, 0, rows);
  }
}

}  // namespace

void ReadLinear(const void* base, const Layout& layout, int64_t elem_size, int64_t start, int64_t n, void* dst) {
  switch (elem_size) {
    case 1: return ReadLinearT(static_cast<const uint8_t*>(base), layout, start, n, static_cast<uint8_t*>(dst));
    case 2: return ReadLinearT(static_cast<const uint16_t*>(base), layout, start, n, static_cast<uint16_t*>(dst));
    case 4: return ReadLinearT(static_cast<const uint32_t*>(base), layout, start, n, static_cast<uint32_t*>(dst));
    default: return ReadLinearT(static_cast<const uint64_t*>(base), layout, start, n, static_cast<uint64_t*>(dst));
  }
}

void StridedCopy(void* dst, const Layout& dst_layout, const void* src, const Layout& src_layout, int64_t elem_size,
                 ThreadPool* pool) {
  switch (elem_size) {
    case 1:
      return StridedCopyT(static_cast<uint8_t*>(dst), dst_layout, static_cast<const uint8_t*>(src), src_layout, pool);
    case 2:
      return StridedCopyT(static_cast<uint16_t*>(dst), dst_layout, static_cast<const uint16_t*>(src), src_layout, pool);
    case 4:
      return StridedCopyT(static_cast<uint32_t*>(dst), dst_layout, static_cast<const uint32_t*>(src), src_layout, pool);
    default:
      return StridedCopyT(static_cast<uint64_t*>(dst), dst_layout, static_cast<const uint64_t*>(src), src_layout, pool);
  }
}

}  // namespace pcp::cpu

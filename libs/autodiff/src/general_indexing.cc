#include "pcp/autodiff/general_indexing.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "pcp/base/status_macros.h"

namespace pcp {
namespace {

using Dims = std::vector<int64_t>;

bool Has(const Dims& v, int64_t x) { return std::find(v.begin(), v.end(), x) != v.end(); }
int64_t IndexOf(const Dims& v, int64_t x) { return std::find(v.begin(), v.end(), x) - v.begin(); }
std::string List(const Dims& v) { return absl::StrCat("[", absl::StrJoin(v, ", "), "]"); }

absl::Status Invalid(absl::string_view op, absl::string_view message) {
  return absl::InvalidArgumentError(absl::StrCat(op, ": ", message));
}

// `dims` (the field `field`) holds distinct dimensions of a tensor of rank `rank` (`what`),
// in increasing order when `sorted`.
absl::Status CheckDimList(absl::string_view op, absl::string_view field, const Dims& dims, int64_t rank,
                          absl::string_view what, bool sorted) {
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] < 0 || dims[i] >= rank) {
      return Invalid(op, absl::StrCat(field, " = ", List(dims), ": ", dims[i], " is not a dimension of the ", what,
                                      " (rank ", rank, ")"));
    }
    for (size_t j = 0; j < i; ++j) {
      if (dims[j] == dims[i]) return Invalid(op, absl::StrCat(field, " = ", List(dims), " names ", dims[i], " twice"));
    }
    if (sorted && i > 0 && dims[i] < dims[i - 1]) {
      return Invalid(op, absl::StrCat(field, " = ", List(dims), " must be in increasing order"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckDisjoint(absl::string_view op, absl::string_view field_a, const Dims& a, absl::string_view field_b,
                           const Dims& b) {
  for (int64_t d : a) {
    if (Has(b, d)) {
      return Invalid(op, absl::StrCat("dimension ", d, " is in both ", field_a, " = ", List(a), " and ", field_b, " = ",
                                      List(b)));
    }
  }
  return absl::OkStatus();
}

// The checks gather and scatter share on their indices: index_vector_dim, the batching dims of
// the indices against the operand's, and the size of the index vector against the map of its
// components onto operand dimensions. Returns the indices' batch shape (without index_vector_dim).
absl::StatusOr<Shape> CheckIndices(absl::string_view op, const TensorType& operand, const TensorType& indices,
                                   int64_t index_vector_dim, const Dims& operand_batching, absl::string_view ob_field,
                                   const Dims& indices_batching, absl::string_view ib_field, const Dims& index_map,
                                   absl::string_view map_field) {
  if (indices.dtype != DType::kI32 && indices.dtype != DType::kI64) {
    return Invalid(op, absl::StrCat("indices must be i32 or i64, got ", indices.ToString()));
  }
  const int64_t ir = indices.rank();
  if (index_vector_dim < 0 || index_vector_dim > ir) {
    return Invalid(op, absl::StrCat("index_vector_dim = ", index_vector_dim, " is outside [0, ", ir, "] for indices ",
                                    indices.ToString()));
  }
  PCP_RETURN_IF_ERROR(CheckDimList(op, ib_field, indices_batching, ir, "indices", /*sorted=*/false));
  if (Has(indices_batching, index_vector_dim)) {
    return Invalid(op,
                   absl::StrCat(ib_field, " = ", List(indices_batching), " holds index_vector_dim ", index_vector_dim));
  }
  if (operand_batching.size() != indices_batching.size()) {
    return Invalid(op, absl::StrCat(ob_field, " = ", List(operand_batching), " and ", ib_field, " = ",
                                    List(indices_batching), " must have the same length"));
  }
  for (size_t i = 0; i < operand_batching.size(); ++i) {
    if (operand.shape[operand_batching[i]] != indices.shape[indices_batching[i]]) {
      return Invalid(op, absl::StrCat("batching dimension ", operand_batching[i], " of the operand ",
                                      operand.ToString(), " and ", indices_batching[i], " of the indices ",
                                      indices.ToString(), " differ in size"));
    }
  }
  PCP_RETURN_IF_ERROR(CheckDimList(op, map_field, index_map, operand.rank(), "operand", /*sorted=*/false));
  PCP_RETURN_IF_ERROR(CheckDisjoint(op, map_field, index_map, ob_field, operand_batching));
  const int64_t vector_size = index_vector_dim < ir ? indices.shape[index_vector_dim] : 1;
  if (static_cast<int64_t>(index_map.size()) != vector_size) {
    return Invalid(op, absl::StrCat(map_field, " = ", List(index_map), " maps ", index_map.size(),
                                    " components, but the index vectors of ", indices.ToString(), " (index_vector_dim ",
                                    index_vector_dim, ") have ", vector_size));
  }
  Shape batch;
  for (int64_t d = 0; d < ir; ++d) {
    if (d != index_vector_dim) batch.push_back(indices.shape[d]);
  }
  return batch;
}

// The start of every operand dimension per index vector: a tensor of the batch shape (in the
// indices' dtype) for the dimensions the index vector or a batching dimension addresses,
// kNoValue (start 0) for the others.
std::vector<ValueId> StartIndices(FunctionBuilder& b, ValueId indices, int64_t operand_rank, int64_t index_vector_dim,
                                  const Dims& index_map, const Dims& operand_batching, const Dims& indices_batching) {
  const TensorType it = b.type(indices);
  Shape batch;
  for (int64_t d = 0; d < it.rank(); ++d) {
    if (d != index_vector_dim) batch.push_back(it.shape[d]);
  }
  std::vector<ValueId> start(static_cast<size_t>(operand_rank), kNoValue);
  for (size_t k = 0; k < index_map.size(); ++k) {
    ValueId component = indices;
    if (index_vector_dim < it.rank()) {
      Dims lo(it.shape.size(), 0), hi = it.shape;
      lo[index_vector_dim] = static_cast<int64_t>(k);
      hi[index_vector_dim] = static_cast<int64_t>(k) + 1;
      component = b.Reshape(b.Slice(indices, lo, hi), batch);
    }
    start[index_map[k]] = component;
  }
  for (size_t j = 0; j < operand_batching.size(); ++j) {
    const int64_t pos = indices_batching[j] - (indices_batching[j] > index_vector_dim ? 1 : 0);
    start[operand_batching[j]] = b.Iota({it.dtype, batch}, pos);
  }
  return start;
}

// One indexed operand dimension of the flattened row dimension.
struct Indexed {
  int64_t size;    // extent in the operand
  int64_t window;  // elements read / written along it from each start
  bool windowed;   // the result (gather) / the updates (scatter) have a dimension of size `window` for it
  ValueId start;   // [batch...] start per index vector (the indices' dtype); kNoValue: 0
};

// Row numbers into the operand with the `dims` flattened (the first outermost):
// rows[batch..., windows...] = Σ_d (start_d + w_d) × stride_d, over the windowed dimensions'
// offsets w_d, in `dtype` (RowType). Gather clamps each start to [0, size_d - window_d] (the
// spec's rule); scatter instead sets a row to -1, which the row scatter skips, wherever one of
// its elements falls outside the operand.
ValueId RowNumbers(FunctionBuilder& b, const std::vector<Indexed>& dims, const Shape& batch, DType dtype, bool gather) {
  Shape shape = batch;
  for (const Indexed& d : dims) {
    if (d.windowed) shape.push_back(d.window);
  }
  const TensorType t{dtype, shape}, bt{dtype, batch};
  Dims batch_dims(batch.size());
  std::iota(batch_dims.begin(), batch_dims.end(), 0);
  std::vector<int64_t> strides(dims.size(), 1);
  for (size_t i = dims.size(); i-- > 1;) strides[i - 1] = strides[i] * dims[i].size;
  ValueId rows = kNoValue, valid = kNoValue;
  int64_t axis = static_cast<int64_t>(batch.size());
  for (size_t i = 0; i < dims.size(); ++i) {
    const Indexed& d = dims[i];
    ValueId index = kNoValue;
    if (d.start != kNoValue) {
      ValueId s = d.start;
      // Gather's clamp; for scatter, any start below -window or above size has every element
      // outside, so clamping to [-window, size] keeps each element's verdict and lets a wide
      // index type narrow to the row type without wrapping.
      const TensorType st{b.type(s).dtype, batch};
      const double lo = gather ? 0.0 : static_cast<double>(-d.window);
      const double hi = static_cast<double>(gather ? d.size - d.window : d.size);
      s = b.Clamp(b.Full(lo, st), s, b.Full(hi, st));
      if (st.dtype != dtype) s = b.Convert(s, dtype);
      index = shape == batch ? s : b.BroadcastInDim(s, shape, batch_dims);
    }
    if (d.windowed) {
      if (d.window > 1) {
        ValueId offset = b.Iota(t, axis);
        index = index == kNoValue ? offset : b.Add(index, offset);
      }
      ++axis;
    }
    if (index == kNoValue) continue;       // this dimension adds 0
    if (!gather && d.start != kNoValue) {  // only a start from the indices can leave the operand
      ValueId in = b.And(b.Compare(index, b.Full(0, t), ComparisonDirection::kGE),
                         b.Compare(index, b.Full(static_cast<double>(d.size), t), ComparisonDirection::kLT));
      valid = valid == kNoValue ? in : b.And(valid, in);
      // Keeps the products below in range; the masked rows are replaced anyway.
      index = b.Clamp(b.Full(0, t), index, b.Full(static_cast<double>(d.size - 1), t));
    }
    ValueId term = strides[i] == 1 ? index : b.Mul(index, b.Full(static_cast<double>(strides[i]), t));
    rows = rows == kNoValue ? term : b.Add(rows, term);
  }
  if (rows == kNoValue) rows = b.Full(0, t);
  if (valid != kNoValue) rows = b.Select(valid, rows, b.Full(-1, t));
  return rows;
}

// The dtype row numbers are computed in: i32 unless the operand has more elements than i32
// holds. Narrower than i64 indices on purpose: GPUs emulate 64-bit integers, and Mesa's
// lavapipe (22.3) gets i64 comparisons wrong in some fused kernels (a 4-d batching iota compared
// and AND-ed with another i64 comparison reads as false): the i32 arithmetic avoids both.
DType RowType(int64_t rows) { return rows > std::numeric_limits<int32_t>::max() ? DType::kI64 : DType::kI32; }

bool IsIdentity(const Dims& perm) {
  for (size_t i = 0; i < perm.size(); ++i) {
    if (perm[i] != static_cast<int64_t>(i)) return false;
  }
  return true;
}

Dims Inverse(const Dims& perm) {
  Dims inv(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) inv[perm[i]] = static_cast<int64_t>(i);
  return inv;
}

int64_t Product(const Shape& s, const Dims& dims) {
  int64_t p = 1;
  for (int64_t d : dims) p *= s[d];
  return p;
}

}  // namespace

absl::StatusOr<TensorType> GatherResultType(const TensorType& operand, const TensorType& start_indices,
                                            const GatherDimensionNumbers& dims, const Dims& slice_sizes) {
  constexpr absl::string_view op = "stablehlo.gather";
  const int64_t r = operand.rank();
  PCP_ASSIGN_OR_RETURN(Shape batch,
                       CheckIndices(op, operand, start_indices, dims.index_vector_dim, dims.operand_batching_dims,
                                    "operand_batching_dims", dims.start_indices_batching_dims,
                                    "start_indices_batching_dims", dims.start_index_map, "start_index_map"));
  if (static_cast<int64_t>(slice_sizes.size()) != r) {
    return Invalid(op, absl::StrCat("slice_sizes = ", List(slice_sizes), " needs one size per operand dimension of ",
                                    operand.ToString()));
  }
  for (int64_t d = 0; d < r; ++d) {
    if (slice_sizes[d] < 0 || slice_sizes[d] > operand.shape[d]) {
      return Invalid(op, absl::StrCat("slice_sizes = ", List(slice_sizes), ": ", slice_sizes[d],
                                      " does not fit dimension ", d, " of ", operand.ToString()));
    }
  }
  PCP_RETURN_IF_ERROR(CheckDimList(op, "collapsed_slice_dims", dims.collapsed_slice_dims, r, "operand", true));
  PCP_RETURN_IF_ERROR(CheckDimList(op, "operand_batching_dims", dims.operand_batching_dims, r, "operand", true));
  PCP_RETURN_IF_ERROR(CheckDisjoint(op, "collapsed_slice_dims", dims.collapsed_slice_dims, "operand_batching_dims",
                                    dims.operand_batching_dims));
  for (const Dims* list : {&dims.collapsed_slice_dims, &dims.operand_batching_dims}) {
    for (int64_t d : *list) {
      // The spec allows 0 here; such a gather reads nothing for elements it still has.
      if (slice_sizes[d] != 1) {
        return Invalid(op, absl::StrCat("slice_sizes[", d, "] = ", slice_sizes[d], ": a collapsed or batching ",
                                        "dimension's slice must be 1"));
      }
    }
  }
  const int64_t offsets =
      r - static_cast<int64_t>(dims.collapsed_slice_dims.size() + dims.operand_batching_dims.size());
  if (static_cast<int64_t>(dims.offset_dims.size()) != offsets) {
    return Invalid(op, absl::StrCat("offset_dims = ", List(dims.offset_dims), " must name one result dimension for ",
                                    "each of the ", offsets, " operand dimensions that are neither collapsed nor ",
                                    "batching"));
  }
  const int64_t result_rank = static_cast<int64_t>(batch.size()) + offsets;
  PCP_RETURN_IF_ERROR(CheckDimList(op, "offset_dims", dims.offset_dims, result_rank, "result", true));
  Shape shape;
  size_t next_batch = 0, next_offset = 0;
  Dims kept;
  for (int64_t d = 0; d < r; ++d) {
    if (!Has(dims.collapsed_slice_dims, d) && !Has(dims.operand_batching_dims, d)) kept.push_back(d);
  }
  for (int64_t i = 0; i < result_rank; ++i) {
    shape.push_back(Has(dims.offset_dims, i) ? slice_sizes[kept[next_offset++]] : batch[next_batch++]);
  }
  return TensorType{operand.dtype, shape};
}

absl::Status CheckScatter(const TensorType& operand, const TensorType& scatter_indices, const TensorType& updates,
                          const ScatterDimensionNumbers& dims) {
  constexpr absl::string_view op = "stablehlo.scatter";
  const int64_t r = operand.rank();
  PCP_ASSIGN_OR_RETURN(Shape batch, CheckIndices(op, operand, scatter_indices, dims.index_vector_dim,
                                                 dims.input_batching_dims, "input_batching_dims",
                                                 dims.scatter_indices_batching_dims, "scatter_indices_batching_dims",
                                                 dims.scatter_dims_to_operand_dims, "scatter_dims_to_operand_dims"));
  if (updates.dtype != operand.dtype) {
    return Invalid(op, absl::StrCat("updates ", updates.ToString(), " and operand ", operand.ToString(),
                                    " differ in element type"));
  }
  PCP_RETURN_IF_ERROR(CheckDimList(op, "inserted_window_dims", dims.inserted_window_dims, r, "operand", true));
  PCP_RETURN_IF_ERROR(CheckDimList(op, "input_batching_dims", dims.input_batching_dims, r, "operand", true));
  PCP_RETURN_IF_ERROR(CheckDisjoint(op, "inserted_window_dims", dims.inserted_window_dims, "input_batching_dims",
                                    dims.input_batching_dims));
  PCP_RETURN_IF_ERROR(CheckDimList(op, "update_window_dims", dims.update_window_dims, updates.rank(), "updates", true));
  Dims kept;
  for (int64_t d = 0; d < r; ++d) {
    if (!Has(dims.inserted_window_dims, d) && !Has(dims.input_batching_dims, d)) kept.push_back(d);
  }
  if (dims.update_window_dims.size() != kept.size()) {
    return Invalid(op, absl::StrCat("update_window_dims = ", List(dims.update_window_dims), " must name one updates ",
                                    "dimension for each of the ", kept.size(), " operand dimensions that are neither ",
                                    "inserted nor batching"));
  }
  if (updates.rank() != static_cast<int64_t>(batch.size() + kept.size())) {
    return Invalid(op, absl::StrCat("updates ", updates.ToString(), " must have rank ", batch.size() + kept.size(),
                                    " (the indices' ", batch.size(), " batch dimensions and ", kept.size(),
                                    " window dimensions)"));
  }
  size_t next_batch = 0, next_window = 0;
  for (int64_t i = 0; i < updates.rank(); ++i) {
    if (Has(dims.update_window_dims, i)) {
      const int64_t d = kept[next_window++];
      if (updates.shape[i] > operand.shape[d]) {
        return Invalid(op, absl::StrCat("updates dimension ", i, " (", updates.shape[i], ") is a window on operand ",
                                        "dimension ", d, " of ", operand.ToString(), " and cannot exceed it"));
      }
    } else if (updates.shape[i] != batch[next_batch++]) {
      return Invalid(op, absl::StrCat("updates ", updates.ToString(), ": its scatter dimensions must match the ",
                                      "indices' ", scatter_indices.ToString(), " batch dimensions ", List(batch)));
    }
  }
  return absl::OkStatus();
}

ValueId EmitGather(FunctionBuilder& b, ValueId operand, ValueId start_indices, const GatherDimensionNumbers& dims,
                   const Dims& slice_sizes) {
  if (!b.status().ok()) return kNoValue;
  const TensorType ot = b.type(operand), it = b.type(start_indices);
  absl::StatusOr<TensorType> result = GatherResultType(ot, it, dims, slice_sizes);
  if (!result.ok()) {
    b.SetError(result.status());
    return kNoValue;
  }
  if (result->num_elements() == 0) return b.Full(0, *result);
  const int64_t r = ot.rank();
  std::vector<ValueId> start = StartIndices(b, start_indices, r, dims.index_vector_dim, dims.start_index_map,
                                            dims.operand_batching_dims, dims.start_indices_batching_dims);
  auto kept = [&](int64_t d) { return !Has(dims.collapsed_slice_dims, d) && !Has(dims.operand_batching_dims, d); };
  // Dimensions whose start is fixed (0) are sliced to their window first; they stay after the rows.
  Dims indexed, free, limit = ot.shape;
  for (int64_t d = 0; d < r; ++d) {
    if (start[d] != kNoValue) {
      indexed.push_back(d);
    } else {
      free.push_back(d);
      limit[d] = slice_sizes[d];
    }
  }
  ValueId x = limit == ot.shape ? operand : b.Slice(operand, Dims(r, 0), limit);
  Dims perm = indexed;
  perm.insert(perm.end(), free.begin(), free.end());
  if (!IsIdentity(perm)) x = b.Transpose(x, perm);
  Shape table = {Product(ot.shape, indexed)};
  for (int64_t d : free) table.push_back(limit[d]);
  if (indexed.size() != 1) x = b.Reshape(x, table);  // none indexed: one row

  Shape batch;
  for (int64_t d = 0; d < it.rank(); ++d) {
    if (d != dims.index_vector_dim) batch.push_back(it.shape[d]);
  }
  ValueId rows;
  if (indexed.size() == 1 && slice_sizes[indexed[0]] == 1 && !kept(indexed[0])) {
    rows = start[indexed[0]];  // the row gather clamps to [0, size - 1], as the spec does here
  } else {
    std::vector<Indexed> plan;
    for (int64_t d : indexed) plan.push_back({ot.shape[d], slice_sizes[d], kept(d), start[d]});
    rows = RowNumbers(b, plan, batch, RowType(table[0]), /*gather=*/true);
  }
  ValueId g = b.Gather(x, rows);  // [batch..., windows of the kept indexed dims..., free dims...]

  // Collapsed free dimensions (size 1) leave; the rest go where offset_dims puts them.
  Dims order;  // operand dimension of each dimension of g after the batch ones
  for (int64_t d : indexed) {
    if (kept(d)) order.push_back(d);
  }
  Dims kept_free;
  for (int64_t d : free) {
    if (kept(d)) kept_free.push_back(d);
  }
  if (kept_free.size() != free.size()) {
    Shape s = batch;
    for (int64_t d : order) s.push_back(slice_sizes[d]);
    for (int64_t d : kept_free) s.push_back(slice_sizes[d]);
    g = b.Reshape(g, s);
  }
  order.insert(order.end(), kept_free.begin(), kept_free.end());
  Dims kept_sorted = order;
  std::sort(kept_sorted.begin(), kept_sorted.end());
  const int64_t nb = static_cast<int64_t>(batch.size());
  Dims out_perm;
  int64_t next_batch = 0, next_offset = 0;
  for (int64_t i = 0; i < result->rank(); ++i) {
    out_perm.push_back(Has(dims.offset_dims, i) ? nb + IndexOf(order, kept_sorted[next_offset++]) : next_batch++);
  }
  return IsIdentity(out_perm) ? g : b.Transpose(g, out_perm);
}

ValueId EmitScatter(FunctionBuilder& b, ValueId operand, ValueId scatter_indices, ValueId updates,
                    const ScatterDimensionNumbers& dims, ScatterCombiner combiner) {
  if (!b.status().ok()) return kNoValue;
  const TensorType ot = b.type(operand), it = b.type(scatter_indices), ut = b.type(updates);
  if (absl::Status s = CheckScatter(ot, it, ut, dims); !s.ok()) {
    b.SetError(s);
    return kNoValue;
  }
  if (ot.num_elements() == 0 || ut.num_elements() == 0) return operand;
  const int64_t r = ot.rank();
  std::vector<ValueId> start =
      StartIndices(b, scatter_indices, r, dims.index_vector_dim, dims.scatter_dims_to_operand_dims,
                   dims.input_batching_dims, dims.scatter_indices_batching_dims);
  Dims kept;  // operand dimensions with a window in the updates, in order
  for (int64_t d = 0; d < r; ++d) {
    if (!Has(dims.inserted_window_dims, d) && !Has(dims.input_batching_dims, d)) kept.push_back(d);
  }
  auto window = [&](int64_t d) {
    return Has(kept, d) ? ut.shape[dims.update_window_dims[IndexOf(kept, d)]] : int64_t{1};
  };
  // A dimension is free when its whole extent is written from 0; every other one is indexed.
  Dims indexed, free;
  for (int64_t d = 0; d < r; ++d) {
    (start[d] == kNoValue && Has(kept, d) && window(d) == ot.shape[d] ? free : indexed).push_back(d);
  }
  Dims perm = indexed;
  perm.insert(perm.end(), free.begin(), free.end());
  ValueId x = IsIdentity(perm) ? operand : b.Transpose(operand, perm);
  Shape table = {Product(ot.shape, indexed)};
  for (int64_t d : free) table.push_back(ot.shape[d]);
  if (indexed.size() != 1) x = b.Reshape(x, table);

  // Updates to [batch..., windows of the kept indexed dims..., free dims...].
  Dims update_perm;
  for (int64_t i = 0; i < ut.rank(); ++i) {
    if (!Has(dims.update_window_dims, i)) update_perm.push_back(i);
  }
  Shape batch;
  for (int64_t i : update_perm) batch.push_back(ut.shape[i]);
  for (const Dims* group : {&indexed, &free}) {
    for (int64_t d : *group) {
      if (Has(kept, d)) update_perm.push_back(dims.update_window_dims[IndexOf(kept, d)]);
    }
  }
  ValueId u = IsIdentity(update_perm) ? updates : b.Transpose(updates, update_perm);

  ValueId rows;
  if (indexed.size() == 1 && !Has(kept, indexed[0]) && start[indexed[0]] != kNoValue) {
    rows = start[indexed[0]];  // the row scatter skips rows outside [0, size), as the spec does here
  } else {
    std::vector<Indexed> plan;
    for (int64_t d : indexed) plan.push_back({ot.shape[d], window(d), Has(kept, d), start[d]});
    rows = RowNumbers(b, plan, batch, RowType(table[0]), /*gather=*/false);
  }
  ValueId y;
  if (combiner == ScatterCombiner::kAdd) {
    y = b.ScatterAdd(x, rows, u);
  } else {
    const TensorType table_type = b.type(x), update_type = b.type(u);
    ValueId zeros = b.Full(0, table_type);
    ValueId written = b.ScatterAdd(zeros, rows, b.Full(1, update_type));
    y = b.Select(b.Compare(written, zeros, ComparisonDirection::kNE), b.ScatterAdd(zeros, rows, u), x);
  }
  if (indexed.size() != 1) {
    Shape s;
    for (int64_t d : perm) s.push_back(ot.shape[d]);
    y = b.Reshape(y, s);
  }
  return IsIdentity(perm) ? y : b.Transpose(y, Inverse(perm));
}

}  // namespace pcp

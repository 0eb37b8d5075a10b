// StableHLO's general gather and scatter, expressed with PCP's row forms (ir.h).
//
// The IR keeps one gather and one scatter: the row forms an embedding uses
// (gather(table[R, F...], rows[I...]) -> [I..., F...] and its scatter-add). Every gather and
// scatter the StableHLO spec allows is emitted as
//   1. layout ops that slice the operand to the window where the start is fixed (gather), bring
//      the indexed operand dimensions to the front and flatten them into one row dimension R;
//   2. integer arithmetic that turns each start index vector into row numbers
//      (Σ_d (start_d + window offset_d) × stride_d): gather clamps each start to
//      [0, size_d - slice_d] as the spec does; scatter marks a row -1 (skipped) wherever an
//      element falls outside the operand, as the spec's reference interpreter skips it;
//   3. one row gather / scatter-add, and layout ops that put the dimensions where the spec wants.
// So the interpreter, both backends, fusion and the VJP rules (gather -> scatter-add, scatter-add
// -> gather of the updates and identity for the operand) need nothing new, and FD checks of
// whole functions cover every form. The common forms cost what they did: the row form (an
// embedding) is one gather instruction as before, and the point pick that cross-entropy exports
// use (logits[n, target[n]]: indices [N, 1, 2]) is one gather of N scalars from the flattened
// logits, whose gradient is one scatter-add of N values.
//
//   GatherDimensionNumbers d{.offset_dims = {}, .collapsed_slice_dims = {0, 1},
//                            .start_index_map = {0, 1}, .index_vector_dim = 2};
//   absl::StatusOr<TensorType> t = GatherResultType(logits_t, indices_t, d, {1, 1});
//   ValueId picked = EmitGather(b, logits, indices, d, {1, 1});   // [N, 1]
#ifndef PCP_AUTODIFF_GENERAL_INDEXING_H_
#define PCP_AUTODIFF_GENERAL_INDEXING_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "pcp/autodiff/builder.h"
#include "pcp/autodiff/ir.h"

namespace pcp {

// #stablehlo.gather<...>: the spec's fields, empty lists where the text leaves them out.
struct GatherDimensionNumbers {
  std::vector<int64_t> offset_dims;
  std::vector<int64_t> collapsed_slice_dims;
  std::vector<int64_t> operand_batching_dims;
  std::vector<int64_t> start_indices_batching_dims;
  std::vector<int64_t> start_index_map;
  int64_t index_vector_dim = 0;
};

// #stablehlo.scatter<...>.
struct ScatterDimensionNumbers {
  std::vector<int64_t> update_window_dims;
  std::vector<int64_t> inserted_window_dims;
  std::vector<int64_t> input_batching_dims;
  std::vector<int64_t> scatter_indices_batching_dims;
  std::vector<int64_t> scatter_dims_to_operand_dims;
  int64_t index_vector_dim = 0;
};

// What a scatter's update region computes: `add` (the region adds its two arguments) or
// `assign` (it returns the update). With duplicate indices assign keeps the sum of the
// duplicates' updates, where the spec leaves the order (and so the result) to the
// implementation.
enum class ScatterCombiner { kAdd, kAssign };

// The spec's constraints on a gather (C1-C22 of stablehlo.gather) and its result type; an
// InvalidArgument names the field and the broken constraint. Indices must be i32 or i64.
absl::StatusOr<TensorType> GatherResultType(const TensorType& operand, const TensorType& start_indices,
                                            const GatherDimensionNumbers& dims,
                                            const std::vector<int64_t>& slice_sizes);
// The same for scatter (one operand, one updates tensor); the result type is the operand's.
absl::Status CheckScatter(const TensorType& operand, const TensorType& scatter_indices, const TensorType& updates,
                          const ScatterDimensionNumbers& dims);

// Emits the gather / scatter into `b` as described above and returns its result; checks first
// (an error is recorded in `b`, and kNoValue returned).
ValueId EmitGather(FunctionBuilder& b, ValueId operand, ValueId start_indices, const GatherDimensionNumbers& dims,
                   const std::vector<int64_t>& slice_sizes);
ValueId EmitScatter(FunctionBuilder& b, ValueId operand, ValueId scatter_indices, ValueId updates,
                    const ScatterDimensionNumbers& dims, ScatterCombiner combiner);

}  // namespace pcp

#endif  // PCP_AUTODIFF_GENERAL_INDEXING_H_

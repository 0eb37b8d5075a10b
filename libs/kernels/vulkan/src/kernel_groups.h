// Kernel groups: merges a KernelPlan's kernels into kernels of several instructions, in three
// kinds, each one dispatch (or two) where each member had its own:
//   - row kernels (KernelKind::kRow): the kernels around reductions over trailing dimensions,
//     so a softmax, a LayerNorm, their gradients and cross-entropy's row part are one dispatch
//     instead of one per reduction and per multi-use value between them;
//   - map groups (KernelKind::kMapGroup): elementwise kernels of one shape that read each other
//     in place (AdamW's update of a parameter);
//   - reduction groups (KernelKind::kSplitReduce with members): independent split reductions
//     (a gradient norm's sums of squares).
//
//   PlanOptions off{.row_kernels = false, .map_groups = false, .reduction_groups = false};
//   PCP_ASSIGN_OR_RETURN(KernelPlan plan, PlanKernels(f, off));
//   GroupKernels(f, plan, {});  // what PlanKernels(f, {}) does by default
//
// A row reduction reduces the trailing k dimensions of an f32 tensor of shape S (its
// "element" shape; the kept leading dimensions R are the rows, the reduced ones a row of L
// elements). A row kernel holds row reductions of one S and k, elementwise ops of shape S
// (computed per element of a row), row broadcasts (below) and elementwise ops of shape R
// (per-row ops on row values, such as LayerNorm's mean, variance and rstd). Its members read each other only "in place":
// an element value at the element being computed, a row value (a row reduction's or a per-row
// op's) at its own row, directly or broadcast back over the row (broadcast_in_dim of R to S
// along the leading dimensions); anything else they read (through inlined expressions) comes
// from memory. The kernel runs a work group per row (or several short rows per group): each
// level of reductions is one pass over the row with a shared-memory tree, then the per-row ops
// of that level, then one pass writes the element values that others read (row kernel_source.h).
//
// Kernels merge, consumers into their producers' groups in program order, when the merged
// group has a row reduction, one S and k, at most kMaxRowReductions reductions and
// `max_bindings` storage buffers, element ops only with enough rows (below), its members
// read each other only in place, and no other kernel lies on a path between the two (which
// would make a cycle). A member's value stays materialized (an output of the row kernel) only
// if it is a result or another kernel reads it; the rest are computed in the row kernel alone.
// A group of one kernel keeps its kernel. Kernels are then put in a topological order,
// earliest first. Split reductions (KernelKind::kSplitReduce, kernel_plan.h) are never members.
//
// Map groups (KernelKind::kMapGroup), once no more row kernels form: elementwise map kernels
// that read each other in place (at the element being computed, through elementwise ops of
// their own shape alone) merge the same way, consumers into their producers' groups, when all
// have one shape, within `max_bindings` and without a path through another kernel: AdamW's
// update of a parameter (the clipped gradient, both moments and the parameter) is so one
// dispatch instead of four, reading the gradient once. A map group runs an invocation per
// element (MapGroupSource, kernel_sources.h).
//
// Reduction groups (a KernelKind::kSplitReduce kernel with members), last: split reductions of
// one dtype, none of which depends on another (directly or through other kernels), merge in
// program order while the group stays within `max_bindings` (its scratch buffer counted), so a
// gradient norm's sums of squares, one per parameter, are two dispatches instead of two each
// (SplitReduceKernelSource, kernel_sources.h; each member's bits as alone).
#ifndef PCP_KERNELS_VULKAN_SRC_KERNEL_GROUPS_H_
#define PCP_KERNELS_VULKAN_SRC_KERNEL_GROUPS_H_

#include <cstdint>

#include "kernel_plan.h"
#include "pcp/autodiff/ir.h"

namespace pcp::vulkan {

// Reductions per row kernel (each holds a shared-memory array of the work group's size).
inline constexpr int kMaxRowReductions = 8;
// A row kernel has a work group per row: with fewer rows than this it takes element ops only
// if they have at most kSmallElementCount elements (else a map kernel spread over the device
// computes them; a gradient norm's one-row reduction does not absorb AdamW's update).
inline constexpr int64_t kMinRowsForElementOps = 64;
inline constexpr int64_t kSmallElementCount = 4096;

// Whether `inst` is a row reduction: a reduce of a non-empty f32 tensor over its trailing
// *reduced_dims (>= 1) dimensions.
bool IsRowReduction(const Function& f, const Instruction& inst, int* reduced_dims);

// Whether `inst` is broadcast_in_dim of a value of shape `rows` to `element`, along its
// leading dimensions (each row value repeated over its row).
bool IsRowBroadcast(const Function& f, const Instruction& inst, const Shape& rows, const Shape& element);

// Merges `plan`'s kernels into row kernels (KernelKind::kRow; if options.row_kernels), map groups
// (KernelKind::kMapGroup; if options.map_groups) and reduction groups (if
// options.reduction_groups) as described above, each binding at most options.max_bindings
// storage buffers (inputs, outputs and scratch; the device's per-stage limit: 32 on lavapipe);
// updates plan.materialized for the values they keep to themselves.
void GroupKernels(const Function& f, KernelPlan& plan, const PlanOptions& options);

// Attention groups (PlanOptions::attention_groups): each pcp.attention kernel takes the
// pcp.attention_lse kernel of the same q, k and attributes, which then runs nowhere else: one
// KernelKind::kAttention kernel with members {forward, lse} and outputs {o, lse}, at the
// forward's place (lse's readers all come later).
void GroupAttention(const Function& f, KernelPlan& plan);

}  // namespace pcp::vulkan

#endif  // PCP_KERNELS_VULKAN_SRC_KERNEL_GROUPS_H_

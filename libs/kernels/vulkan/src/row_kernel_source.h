// The GLSL of a row kernel (KernelKind::kRow, kernel_groups.h): a softmax, a LayerNorm or
// its gradient in one dispatch.
//
//   KernelSource src = RowKernelSource(f, plan, k);  // bindings: src.inputs, then k.outputs
//
// Each row of L elements is handled by P = min(largest power of two <= L, 256) invocations of
// a work group of max(P, 64), which so holds 64 / P rows when rows are short (one per lane for
// L = 1); groups loop over rows beyond the dispatch's 65535 groups. Per row, in order:
//   - per-row ops that read no reduction;
//   - for each level of reductions (those that read no reduction of their level): one pass
//     over the row, invocation i accumulating elements i, i + P, i + 2P, ... in turn from the
//     identity (0, or -inf for max), then a shared-memory tree (partial[i] combines
//     partial[i + s] for s = P/2, P/4, ..., 1), then combine(init, partial[0]); then the
//     per-row ops that read those results;
//   - a last pass that writes the element values others read, and the first invocation of the
//     row writes its row values that others read.
// Element values a pass needs are computed where needed (recomputed in each pass that needs
// them); the combine order depends only on the shapes, so results are the same bits run to
// run. Max is pcp_max (IEEE maximum: NaN propagates), as in the reduce kernels.
#ifndef PCP_KERNELS_VULKAN_SRC_ROW_KERNEL_SOURCE_H_
#define PCP_KERNELS_VULKAN_SRC_ROW_KERNEL_SOURCE_H_

#include "kernel_plan.h"
#include "kernel_sources.h"
#include "pcp/autodiff/ir.h"

namespace pcp::vulkan {

// `k` is a KernelKind::kRow kernel of `plan`.
KernelSource RowKernelSource(const Function& f, const KernelPlan& plan, const PlannedKernel& k);

}  // namespace pcp::vulkan

#endif  // PCP_KERNELS_VULKAN_SRC_ROW_KERNEL_SOURCE_H_

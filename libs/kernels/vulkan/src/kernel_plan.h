// Splits a function into kernels: which values live in buffers ("materialized") and which
// are recomputed inline, as GLSL expressions, inside the kernels that read them.
//
//   PCP_ASSIGN_OR_RETURN(KernelPlan plan, PlanKernels(f));
//   for (const PlannedKernel& k : plan.kernels) ... // one dispatch each, in order
//
// Rules: parameters, results, reduce / dot_general / scatter results and non-scalar
// constants are materialized. Other values (elementwise, layout, iota, gather, concatenate)
// are inlined into their one consumer; a value with several uses is materialized unless it
// is cheap index arithmetic over materialized or cheap values (layout ops, iota, scalar
// constants). Operands of dot_general and scatter (read many times per output element) are
// materialized unless cheap.
//
// Row kernels (row_kernel_plan.h, on unless `row_kernels` is false): kernels around a reduction
// over trailing dimensions (a softmax, a LayerNorm and their gradients) then merge into one
// kernel that computes each row's reductions and the values that consume them.
#ifndef PCP_KERNELS_VULKAN_SRC_KERNEL_PLAN_H_
#define PCP_KERNELS_VULKAN_SRC_KERNEL_PLAN_H_

#include <vector>

#include "absl/status/statusor.h"
#include "pcp/autodiff/ir.h"

namespace pcp::vulkan {

enum class KernelKind { kMap, kReduce, kDot, kScatter, kRow };

struct PlannedKernel {
  KernelKind kind = KernelKind::kMap;
  ValueId value = kNoValue;    // the materialized value it writes
  int instruction = -1;        // index of the instruction producing `value`
  int fused_instructions = 1;  // instructions computed inline by this kernel (for profiles)
  // kRow only: the instructions whose values the kernel computes itself (program order), and
  // the materialized values it writes (`value` is outputs[0]).
  std::vector<int> members;
  std::vector<ValueId> outputs;
};

// The values kernel `k` writes: k.outputs for a row kernel, else k.value.
std::vector<ValueId> OutputsOf(const PlannedKernel& k);

struct KernelPlan {
  std::vector<bool> materialized;  // per value
  std::vector<int> producer;       // per value: instruction index, -1 for parameters
  std::vector<PlannedKernel> kernels;
  std::vector<ValueId> constants;  // materialized constants (uploaded at compile time)
};

// Unimplemented naming the op and dtype for what the backend cannot compute: f16/bf16
// values other than moved (parameters, results, constants, layout ops, gather rows; and
// only with `half_moves`, the device's 16-bit storage), dot_general on other than f32.
absl::Status CheckSupported(const Function& f, bool half_moves);
// `max_bindings`: the storage buffers one kernel may bind (the device's per-stage limit). No
// kernel exceeds it: where an inlined chain would load too many materialized values (a sum of
// 40 parameters), its largest subexpression that fits in a kernel of its own is materialized,
// until the kernel fits; row kernels respect it too. ResourceExhausted if an instruction alone
// reads more (a concatenate of more operands than the limit).
absl::StatusOr<KernelPlan> PlanKernels(const Function& f, bool half_moves, bool row_kernels = true,
                                       int max_bindings = 32);

}  // namespace pcp::vulkan

#endif  // PCP_KERNELS_VULKAN_SRC_KERNEL_PLAN_H_

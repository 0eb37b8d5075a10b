// Splits a function into kernels: which values live in buffers ("materialized") and which
// are recomputed inline, as GLSL expressions, inside the kernels that read them.
//
//   PCP_ASSIGN_OR_RETURN(KernelPlan plan, PlanKernels(f, {.half_moves = true}));
//   for (const PlannedKernel& k : plan.kernels) ... // one dispatch each, in order
//
// Rules: parameters, results, reduce / dot_general / scatter results and non-scalar
// constants are materialized, and so are fused attention's (pcp.attention*) results. Other values (elementwise, layout, iota, gather, concatenate)
// are inlined into their one consumer; a value with several uses is materialized unless it
// is cheap index arithmetic over materialized or cheap values (layout ops, iota, scalar
// constants). Operands of dot_general, scatter and attention (read many times per output
// element) are materialized unless cheap.
//
// Row kernels (kernel_groups.h, on unless `row_kernels` is false): kernels around a reduction
// over trailing dimensions (a softmax, a LayerNorm and their gradients) then merge into one
// kernel that computes each row's reductions and the values that consume them.
//
// Map groups (kernel_groups.h, on unless `map_groups` is false): elementwise kernels of one
// shape that read each other in place (AdamW's moments and parameter update) then merge into
// one kernel with several outputs. Reduction groups (the same, unless `reduction_groups` is
// false): independent split reductions (a gradient norm's sums of squares) share two dispatches.
//
// Split reductions (on unless `split_reductions` is false): a reduction with few outputs and a
// long reduced extent (a gradient norm's sum of squares over a whole parameter) would run on
// one work group per output; it becomes a KernelKind::kSplitReduce kernel of two dispatches
// (ReduceSplitFor below; kernel_sources.h), and is not a row kernel's member.
#ifndef PCP_KERNELS_VULKAN_SRC_KERNEL_PLAN_H_
#define PCP_KERNELS_VULKAN_SRC_KERNEL_PLAN_H_

#include <vector>

#include "absl/status/statusor.h"
#include "pcp/autodiff/ir.h"

namespace pcp::vulkan {

// kSplitReduce: a reduce in two dispatches (ReduceSplitFor), binding a scratch buffer after its
// output (or several: a reduction group). kRow, kMapGroup and a reduction group's kSplitReduce:
// several instructions ("members") and outputs (kernel_groups.h).
// kAttention: a pcp.attention* op (attention_source.cc).
enum class KernelKind { kMap, kReduce, kSplitReduce, kDot, kScatter, kRow, kMapGroup, kAttention };

struct PlannedKernel {
  KernelKind kind = KernelKind::kMap;
  ValueId value = kNoValue;    // the materialized value it writes
  int instruction = -1;        // index of the instruction producing `value` (a rounded
                               // product's kernel: the product's; PlanOptions::half_buffers)
  int fused_instructions = 1;  // instructions computed inline by this kernel (for profiles)
  // A kernel of several instructions only (empty otherwise): the instructions whose values it
  // computes itself (program order), and the materialized values it writes (`value` is
  // outputs[0]).
  std::vector<int> members;
  std::vector<ValueId> outputs;
};

// The values kernel `k` writes: k.outputs for a kernel of several instructions, else k.value.
std::vector<ValueId> OutputsOf(const PlannedKernel& k);

struct KernelPlan {
  std::vector<bool> materialized;  // per value
  std::vector<int> producer;       // per value: instruction index, -1 for parameters
  std::vector<PlannedKernel> kernels;
  std::vector<ValueId> constants;  // materialized constants (uploaded at compile time)
};

// How a reduce is split (`inst` reduces `outputs` results over `extent` elements each). The rule
// depends on the shapes alone, never on the device, so a program's sums are combined in the same
// order, and give the same bits, on every run and device. A reduce of f32, i32 or i64 with
// fewer than kSplitMaxOutputs outputs and an extent over kSplitSliceElements is split: pass 1
// runs `slices` = min(ceil(extent / kSplitSliceElements), kSplitMaxSlices) work groups per
// output, group g reducing the contiguous reduced positions [g * slice, min((g + 1) * slice,
// extent)) of its output (slice = ceil(extent / slices)) into one partial; pass 2 runs a work
// group per output that reduces its `slices` partials in slice order and combines the init.
// So a full sum of 2^20 elements is 256 work groups of 4096 elements, then one of 256 partials.
inline constexpr int64_t kSplitSliceElements = 4096;
inline constexpr int64_t kSplitMaxSlices = 4096;
// With this many outputs a work group per output already fills a large GPU (an H100 holds
// ~4000 work groups of 64 at once, 132 multiprocessors).
inline constexpr int64_t kSplitMaxOutputs = 1024;
struct ReduceSplit {
  int64_t outputs = 0, extent = 0;
  int64_t slices = 1;  // > 1: split
  int64_t slice = 0;   // reduced positions per slice
  bool split() const { return slices > 1; }
};
ReduceSplit ReduceSplitFor(const Function& f, const Instruction& inst);

// Whether `inst` widens a bf16 / f16 value to f32 (exactly; what half buffers inline).
bool WidensHalf(const Function& f, const Instruction& inst);

// Unimplemented naming the op and dtype for what the backend cannot compute: f16/bf16
// values other than moved (parameters, results, constants, layout ops, gather rows; and
// only with `half_moves`, the device's 16-bit storage), dot_general on other than f32.
absl::Status CheckSupported(const Function& f, bool half_moves);
// How PlanKernels plans: the device's abilities and the backend's switches
// (VulkanBackendOptions and its environment variables).
struct PlanOptions {
  bool half_moves = false;       // the device has 16-bit storage: f16 / bf16 values may be moved
  bool row_kernels = true;       // row kernels (kernel_groups.h)
  bool map_groups = true;        // map groups (kernel_groups.h)
  bool reduction_groups = true;  // reduction groups (kernel_groups.h; with split_reductions)
  bool split_reductions = true;  // ReduceSplitFor
  // With half_moves: a bf16 / f16 value widened to f32 for several kernels or for a dense reader
  // (mixed precision's rounded matmul operands) is materialized in its 16 bits and the widening
  // inlined into each reader, rather than the widened f32 value materialized; and a product
  // whose only reader rounds it to 16 bits is computed by the rounding's kernel (a kDot kernel
  // whose value is the rounding's, `instruction` the product's), which writes 16 bits instead of
  // the f32 product (the same bits).
  bool half_buffers = true;
  // A pcp.attention and the pcp.attention_lse of the same q, k and attributes (its backward's)
  // run as one kernel at the forward's place, writing o and lse (GroupAttention,
  // kernel_groups.h; the same bits).
  bool attention_groups = true;
  // The storage buffers one kernel may bind (the device's per-stage limit). No kernel exceeds
  // it: where an inlined chain would load too many materialized values (a sum of 40
  // parameters), its largest subexpression that fits in a kernel of its own is materialized,
  // until the kernel fits; row kernels and map groups respect it too. A split reduction counts
  // its scratch buffer too.
  int max_bindings = 32;
};

// ResourceExhausted if an instruction alone reads more buffers than options.max_bindings (a
// concatenate of more operands than the limit).
absl::StatusOr<KernelPlan> PlanKernels(const Function& f, const PlanOptions& options);

}  // namespace pcp::vulkan

#endif  // PCP_KERNELS_VULKAN_SRC_KERNEL_PLAN_H_

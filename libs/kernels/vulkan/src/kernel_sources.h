// GLSL sources for each kind of kernel in a KernelPlan, built on ExprCodegen: the kernel's
// root instruction and everything inlined into it, the storage buffers it reads (bindings
// 0..n-1, materialized values) and its output (binding n), and the dispatch size.
//
//   PCP_ASSIGN_OR_RETURN(KernelSource src, KernelSourceFor(f, plan, plan.kernels[0]));
//   compile src.glsl; bind src.inputs then the output; vkCmdDispatch(src.groups...)
//   if (src.split()) { bind a scratch buffer of src.scratch_bytes next; barrier;
//                      vkCmdDispatch(src.finish_groups...) with src.finish_glsl, same bindings }
#ifndef PCP_KERNELS_VULKAN_SRC_KERNEL_SOURCES_H_
#define PCP_KERNELS_VULKAN_SRC_KERNEL_SOURCES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "kernel_plan.h"
#include "pcp/autodiff/ir.h"

namespace pcp::vulkan {

struct KernelSource {
  std::string name;  // "map_add_12", "dot_34", ... (for messages and profiles)
  std::string glsl;
  std::vector<ValueId> inputs;  // binding i reads inputs[i]; binding inputs.size() is the output
  uint32_t groups[3] = {1, 1, 1};
  bool empty = false;  // nothing to compute (zero elements): no dispatch
  // A split reduction (KernelKind::kSplitReduce) also binds a scratch buffer of scratch_bytes
  // after its output: `glsl` writes its partials there, then `finish_glsl`, dispatched next with
  // `finish_groups` over the same bindings, reduces them into the output. Else 0 and "".
  int64_t scratch_bytes = 0;
  std::string finish_glsl;
  uint32_t finish_groups[3] = {1, 1, 1};

  bool split() const { return !finish_glsl.empty(); }
  // Storage buffers bound: the inputs, `outputs` outputs and the scratch buffer if any.
  size_t bindings(size_t outputs) const { return inputs.size() + outputs + (split() ? 1 : 0); }
};

// What the device offers beyond the plain shaders (VulkanContext), and the backend's choice
// of dot_general tiles (VulkanBackendOptions::dot_tile).
struct KernelSourceOptions {
  bool cooperative_matrix_f16 = false;  // VK_NV_cooperative_matrix 16x16x16 f16*f16+f32, subgroups of 32
  // The cooperative-matrix kernels with emulated matrices (CoopDotKernelSource), where
  // cooperative_matrix_f16 is set: for tests of their tiling on devices without tensor cores.
  bool emulate_cooperative_matrix = false;
  int dot_tile = 0;  // DotTileFor's `forced`: 0 (by shape), 64 or 128
};

absl::StatusOr<KernelSource> KernelSourceFor(const Function& f, const KernelPlan& plan, const PlannedKernel& k,
                                             const KernelSourceOptions& options = {});

// dot_general `inst` runs on cooperative matrices: the device has them and both operands are
// f16-rounded (convert(convert(x, f16), f32): exact in f16, so the tensor cores compute the
// program's own product, accumulating in f32).
bool UsesCooperativeMatrix(const Function& f, const Instruction& inst, const KernelSourceOptions& options);

// One kernel family each (kernel_sources.cc, matmul_source.cc; row kernels: row_kernel_source.h).
KernelSource MapKernelSource(const Function& f, const KernelPlan& plan, const Instruction& inst);
// A map group (KernelKind::kMapGroup, kernel_groups.h): an invocation per element computes
// every member there, in program order (each once, reading the others in registers), and
// stores k.outputs (bindings after the inputs).
KernelSource MapGroupSource(const Function& f, const KernelPlan& plan, const PlannedKernel& k);
// Reductions (reduce_source.cc): in one dispatch (KernelKind::kReduce), or split in two
// (KernelKind::kSplitReduce; ReduceSplitFor, kernel_plan.h): pass 1 reduces each slice into a
// partial in the scratch buffer, the finishing pass a work group per output reduces its
// partials in slice order and combines the init. A split kernel with members (a reduction
// group, kernel_groups.h) runs them all in the same two dispatches, pass 1's work groups the
// members' partials one member after another, pass 2's their outputs, each member's with the
// slices and order it has alone (so the same bits); output i is members[i]'s.
KernelSource ReduceKernelSource(const Function& f, const KernelPlan& plan, const Instruction& inst);
KernelSource SplitReduceKernelSource(const Function& f, const KernelPlan& plan, const PlannedKernel& k);
KernelSource ScatterKernelSource(const Function& f, const KernelPlan& plan, const Instruction& inst);
// A pcp.attention* op (attention_source.cc): FlashAttention's forward or one of its backward
// kernels, a row of the result per invocation, the other side walked in shared-memory tiles;
// an attention group (kernel_groups.h) writes the forward's o and its lse.
KernelSource AttentionKernelSource(const Function& f, const KernelPlan& plan, const PlannedKernel& k);
// A product's tile (plain shaders and cooperative matrices alike), 64 or 128 outputs square (matmul_source.cc; the same
// bits either way): `forced` if 64 or 128, else 128 for products of at least 128 x 128 with
// kLargeDotTileMinTiles such tiles or more (enough work groups to fill a large GPU: an H100's
// 132 multiprocessors hold two each), else 64.
inline constexpr int64_t kLargeDotTileMinTiles = 256;
int DotTileFor(const Function& f, const Instruction& inst, int forced);
// `out`: the value the kernel writes, the product's or (a rounded product, kernel_plan.h's
// half_buffers) its 16-bit rounding's.
KernelSource DotKernelSource(const Function& f, const KernelPlan& plan, const Instruction& inst, ValueId out, int tile);
// The same product on GL_NV_cooperative_matrix (f16 tiles in shared memory, f32 accumulators),
// in tiles of `tile` (DotTileFor) square: only for UsesCooperativeMatrix's products; compiles
// anywhere, runs on devices that have it, or with `emulate` (plain GLSL matrices, the same
// tiling) on any device.
KernelSource CoopDotKernelSource(const Function& f, const KernelPlan& plan, const Instruction& inst, ValueId out,
                                 int tile, bool emulate);

// A compute shader's source: the prelude it needs (glsl_prelude.h), local size `local_x`,
// `declarations` (buffers, shared arrays) and main's body.
std::string ShaderSource(int64_t local_x, const std::string& declarations, const std::string& main_body);

// Work-group count for `n` items of `per_group` each, capped at the portable limit (kernels
// loop over the rest).
uint32_t GroupsFor(int64_t n, int64_t per_group);

}  // namespace pcp::vulkan

#endif  // PCP_KERNELS_VULKAN_SRC_KERNEL_SOURCES_H_

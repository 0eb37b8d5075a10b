// The Vulkan backend: compiles an IR function into compute shaders (GLSL generated per
// kernel, compiled to SPIR-V at run time by shaderc, cached on disk by source hash) and
// runs them from one recorded command buffer. Buffers live in device memory, so training
// state stays on the device between Runs; only CopyIn/CopyOut move bytes to or from the host
// (through host-visible staging buffers; a CopyIn of at most 1 MiB goes to the device with
// the next Run or CopyOut, in the same queue submission).
//
//   PCP_ASSIGN_OR_RETURN(std::unique_ptr<Backend> gpu, CreateVulkanBackend({}));
//   std::printf("%s\n", gpu->DeviceDescription().c_str());   // "NVIDIA H100 (discrete GPU)"
//   PCP_ASSIGN_OR_RETURN(auto exe, gpu->Compile(train_step));  // as with any Backend
//
// Device choice: the first device whose name contains `device_name` if set, else
// `device_index` if >= 0, else the best by kind: discrete GPU, integrated GPU, virtual GPU,
// CPU implementation (e.g. Mesa lavapipe). Devices need Vulkan 1.1+, shaderInt64 and 8-bit
// storage buffers.
//
// Kernels: every elementwise, layout (broadcast/reshape/transpose/slice/concatenate),
// iota and gather instruction is fused into the kernel of the value that consumes it when
// it has one use (or is cheap index arithmetic); reductions, dot_general (a tiled matmul
// whose tile loaders read operands through their fused index expressions; 64 x 64 tiles, or
// 128 x 128 for large products: VulkanBackendOptions::dot_tile) and scatter get their own
// kernels. Shapes are compiled into the generated source as constants. Row kernels:
// a reduction over trailing dimensions, the per-row ops on its result and the elementwise ops
// that read it broadcast back over its rows (and those it reads) are one kernel, a work group
// per row, so a softmax, a LayerNorm and their gradients are one dispatch each
// (VulkanBackendOptions::row_kernels; PCP_VULKAN_ROW_KERNELS=0 turns them off). Map groups:
// elementwise kernels of one shape that read each other in place are one kernel with several
// outputs, so AdamW's update of a parameter (clipped gradient, both moments, the parameter) is
// one dispatch (VulkanBackendOptions::map_groups; PCP_VULKAN_MAP_GROUPS=0 turns them off). Split
// reductions: a reduction with few outputs over many elements (a gradient norm's sum of squares,
// a loss's mean) runs as many work groups per output, each reducing a fixed slice, then a
// second dispatch combining their partials in a fixed order; the slices depend on the shapes
// only, so results are the same bits on every run and device
// (VulkanBackendOptions::split_reductions; PCP_VULKAN_SPLIT_REDUCTIONS=0 turns them off).
// Reduction groups: independent split reductions (a gradient norm's sum of squares per
// parameter) share the same two dispatches, each with the bits it has alone
// (VulkanBackendOptions::reduction_groups; PCP_VULKAN_REDUCTION_GROUPS=0 turns them off).
// Half buffers: a bf16 / f16 value that several kernels (or a matmul) read widened to f32, as
// mixed precision's rounded matmul operands are, is kept in 16 bits and widened where read,
// and a product whose only reader rounds it writes the rounding in 16 bits: the same bits in
// half the bytes (VulkanBackendOptions::half_buffers; PCP_VULKAN_HALF_BUFFERS=0
// turns them off). Fused attention (pcp/autodiff/attention.h): each pcp.attention* op is one
// kernel that never stores a block x block tensor, and a forward and its backward's lse are one
// kernel writing both (VulkanBackendOptions::attention_groups; PCP_VULKAN_ATTENTION_GROUPS=0
// turns them off).
//
// Types: f32, i32, i64 and i1 (stored one byte per element) are computed as the CPU backend
// computes them; f16/bf16 values are only moved (layout ops, gather rows) and converted to and
// from f32 (mixed precision's roundings), on devices with 16-bit storage buffers; dot_general
// is f32, on cooperative matrices (tensor cores) where its operands are f16-rounded and the
// device has them (VulkanDeviceInfo::cooperative_matrix_f16).
//
// Profiling: with PCP_VULKAN_PROFILE=1 every kernel is timed with timestamp queries and each
// executable prints its 40 heaviest kernels to stderr when destroyed.
#ifndef PCP_KERNELS_VULKAN_BACKEND_H_
#define PCP_KERNELS_VULKAN_BACKEND_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "pcp/kernels/backend.h"

namespace pcp {

struct VulkanBackendOptions {
  int device_index = -1;         // index in ListVulkanDevices(); -1 = best by kind
  std::string device_name;       // case-insensitive substring of the device name; wins if set
  std::string shader_cache_dir;  // "" = $XDG_CACHE_HOME/pcp/spirv or ~/.cache/pcp/spirv;
                                 // "none" disables the disk cache
  bool row_kernels = true;       // row kernels (above); off also with PCP_VULKAN_ROW_KERNELS=0
  bool map_groups = true;        // map groups (above); off also with PCP_VULKAN_MAP_GROUPS=0
  bool split_reductions = true;  // above; off also with PCP_VULKAN_SPLIT_REDUCTIONS=0
  bool reduction_groups = true;  // above; off also with PCP_VULKAN_REDUCTION_GROUPS=0
  bool half_buffers = true;      // above; off also with PCP_VULKAN_HALF_BUFFERS=0
  // A fused attention's forward and its backward's lse (pcp.attention and pcp.attention_lse of
  // the same q and k) in one kernel at the forward's place, writing both: the backward does not
  // walk the keys once more for lse (the same bits). Off also with PCP_VULKAN_ATTENTION_GROUPS=0.
  bool attention_groups = true;
  // dot_general's tile on the f32 shaders: 0 = by shape (128 x 128 for large products, else
  // 64 x 64), 64 or 128 = always that one; PCP_VULKAN_DOT_TILE=64|128 overrides. The same bits
  // either way. Another value is refused by CreateVulkanBackend.
  int dot_tile = 0;
  // f16 products on the tensor-core kernels with emulated matrices (plain GLSL, the same tiles)
  // on any device with shaderFloat16 (CreateVulkanBackend refuses others), the GPU's own
  // cooperative matrices not used: for tests of those kernels without such a GPU (also
  // PCP_VULKAN_COOPMAT=emulate).
  bool emulate_cooperative_matrix = false;
};

enum class VulkanDeviceKind { kDiscreteGpu, kIntegratedGpu, kVirtualGpu, kCpu, kOther };
absl::string_view VulkanDeviceKindName(VulkanDeviceKind kind);  // "discrete GPU", ...

struct VulkanDeviceInfo {
  int index = 0;
  std::string name;
  VulkanDeviceKind kind = VulkanDeviceKind::kOther;
  std::string api_version;  // "1.3.230"
  bool usable = false;      // has what the backend needs (compute queue, int64, 8-bit storage)
  std::string why_unusable;
  // Tensor cores through VK_NV_cooperative_matrix: the device offers a subgroup-scope
  // 16x16x16 f16 x f16 + f32 -> f32 product, shaderFloat16 and 32-wide subgroups. Products of
  // f16-rounded operands (pcp/autodiff/mixed_precision.h) then run on it; everything else on
  // the plain f32 shaders. PCP_VULKAN_COOPMAT=0 turns it off.
  bool cooperative_matrix_f16 = false;
  bool shader_float16 = false;  // float16 arithmetic (shaderFloat16), enabled where offered
  std::string features;         // one line: 16-bit storage, float16, subgroup size, cooperative matrices
};

// Every physical device the loader reports; Unavailable if there is no Vulkan loader/driver.
absl::StatusOr<std::vector<VulkanDeviceInfo>> ListVulkanDevices();

// Unavailable (with the reason) when no usable device exists.
absl::StatusOr<std::unique_ptr<Backend>> CreateVulkanBackend(VulkanBackendOptions options = {});

// What one Run of a Vulkan executable dispatches.
struct VulkanSchedule {
  int dispatches = 0;        // dispatches per Run: a kernel each, two for a split reduction
  int row_kernels = 0;       // kernels that are row kernels
  int map_groups = 0;        // kernels that are map groups
  int split_reductions = 0;  // kernels that are split reductions (a reduction group: one)
  int reduction_groups = 0;  // split reductions of several members
  int64_t work_groups = 0;   // work groups over all dispatches
  int max_bindings = 0;      // the most storage buffers one kernel binds (inputs, outputs, scratch)
  int binding_limit = 0;     // the device's per-stage storage-buffer limit, which no kernel exceeds
};
// InvalidArgument if `exe` was not compiled by a Vulkan backend.
absl::StatusOr<VulkanSchedule> GetVulkanSchedule(const Executable& exe);

}  // namespace pcp

#endif  // PCP_KERNELS_VULKAN_BACKEND_H_

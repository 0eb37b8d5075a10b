// A compiled function on the Vulkan backend: one compute pipeline per distinct kernel
// source, one descriptor set per kernel, device buffers for every materialized value, and
// one command buffer recorded for a binding of argument/result buffers and re-recorded only
// when a Run binds different buffers. Run submits it and waits; nothing passes through the
// host. Results are written after all kernels ran (copied from the executable's buffers),
// so a result buffer may alias an argument.
//
// With PCP_VULKAN_PROFILE=1 each dispatch is bracketed by timestamp queries; the destructor
// prints the 40 heaviest kernels (total ms over all Runs) to stderr.
#ifndef PCP_KERNELS_VULKAN_SRC_VULKAN_EXECUTABLE_H_
#define PCP_KERNELS_VULKAN_SRC_VULKAN_EXECUTABLE_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "buffer_pool.h"
#include "kernel_plan.h"
#include "kernel_sources.h"
#include "pcp/kernels/backend.h"
#include "shader_compiler.h"

namespace pcp::vulkan {

struct VulkanExecutableStats {
  int num_instructions = 0;
  int num_kernels = 0;           // kernels per Run
  int num_dispatches = 0;        // dispatches per Run: a kernel each, two for a split reduction
  int num_row_kernels = 0;       // kernels that are row kernels (kernel_groups.h)
  int num_map_groups = 0;        // kernels that are map groups (kernel_groups.h)
  int num_split_reductions = 0;  // kernels that are split reductions (kernel_plan.h)
  int num_reduction_groups = 0;  // split reductions of several members (kernel_groups.h)
  int64_t work_groups = 0;       // work groups over all dispatches of a Run
  int num_pipelines = 0;         // distinct kernel sources
  int max_kernel_bindings = 0;   // the most storage buffers one kernel binds (scratch included)
  int binding_limit = 0;         // the device's per-stage storage-buffer limit
  int64_t buffer_bytes = 0;      // executable-owned device memory (values and constants)
  int64_t unshared_bytes = 0;    // what kernel outputs would take without sharing buffers
  double codegen_seconds = 0;    // planning and GLSL generation
  double shaderc_seconds = 0;    // GLSL -> SPIR-V (0 for sources found in the caches)
  double pipeline_seconds = 0;   // vkCreateComputePipelines (the driver's compiler)
};

class VulkanExecutable : public Executable {
 public:
  // `switches`: the planner's row_kernels, map_groups, split_reductions, reduction_groups and half_buffers
  // (the device's abilities, half_moves and max_bindings, are filled in from the pool's context);
  // `sources`: the dot tile and the emulation switch (cooperative_matrix_f16 is the context's,
  // or on with emulate_cooperative_matrix).
  static absl::StatusOr<std::unique_ptr<VulkanExecutable>> Create(const Function& f, std::shared_ptr<BufferPool> pool,
                                                                  ShaderCompiler& compiler, bool profile,
                                                                  PlanOptions switches = {},
                                                                  KernelSourceOptions sources = {});
  ~VulkanExecutable() override;

  const Function& function() const override { return f_; }
  absl::Status Run(absl::Span<Buffer* const> args, absl::Span<Buffer* const> results) override;
  VulkanExecutableStats stats() const;
  // One line per kernel in dispatch order.
  std::string DescribeSchedule() const;

 private:
  struct Pipeline {
    VkShaderModule module = VK_NULL_HANDLE;
    VkDescriptorSetLayout set_layout = VK_NULL_HANDLE;
    VkPipelineLayout layout = VK_NULL_HANDLE;
    VkPipeline pipeline = VK_NULL_HANDLE;
  };
  struct Kernel {
    KernelSource src;
    KernelKind kind = KernelKind::kMap;
    std::vector<ValueId> outputs;  // bindings src.inputs.size() + i; then scratch_ if src.split()
    int fused_instructions = 1;
    int pipeline = -1;
    int finish_pipeline = -1;  // src.finish_glsl's, for a split reduction
    VkDescriptorSet set = VK_NULL_HANDLE;
    double total_ms = 0;
  };

  VulkanExecutable(Function f, std::shared_ptr<BufferPool> pool) : f_(std::move(f)), pool_(std::move(pool)) {}
  absl::Status Build(ShaderCompiler& compiler, bool profile, PlanOptions plan_options, KernelSourceOptions sources);
  // The pipeline of `glsl` (one per distinct source) binding `bindings` storage buffers.
  absl::StatusOr<int> PipelineFor(const std::string& glsl, const std::string& name, size_t bindings,
                                  ShaderCompiler& compiler);
  absl::Status AssignBuffers();
  absl::Status Bind(const std::vector<VkBuffer>& args, const std::vector<VkBuffer>& results);
  VkBuffer BufferOf(ValueId v, const std::vector<VkBuffer>& args) const;
  void CollectTimestamps();

  Function f_;
  std::shared_ptr<BufferPool> pool_;
  KernelPlan plan_;
  std::vector<Pipeline> pipelines_;
  std::vector<Kernel> kernels_;
  std::vector<DeviceBuffer> value_buffers_;  // per value; empty for params and inlined values
  std::vector<DeviceBuffer> owned_buffers_;  // distinct buffers behind value_buffers_
  std::vector<DeviceBuffer> result_temps_;   // per result whose value is a parameter
  // Split reductions' partials: one buffer for all, as each kernel is done with it before the
  // next runs (a full barrier follows every dispatch).
  DeviceBuffer scratch_;
  std::vector<int> param_index_;                              // per value: parameter position or -1
  absl::flat_hash_map<std::string, int> pipeline_of_source_;  // during Build: PipelineFor's
  VkDescriptorPool descriptor_pool_ = VK_NULL_HANDLE;
  VkCommandBuffer cb_ = VK_NULL_HANDLE;
  VkQueryPool queries_ = VK_NULL_HANDLE;
  bool recorded_ = false;
  std::vector<VkBuffer> bound_args_, bound_results_;
  int runs_ = 0;
  double codegen_seconds_ = 0, shaderc_seconds_ = 0, pipeline_seconds_ = 0;
  int binding_limit_ = 0;
};

}  // namespace pcp::vulkan

#endif  // PCP_KERNELS_VULKAN_SRC_VULKAN_EXECUTABLE_H_

#include "pcp/kernels/vulkan_backend.h"

#include <cstdlib>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "buffer_pool.h"
#include "kernel_plan.h"
#include "kernel_sources.h"
#include "pcp/base/status_macros.h"
#include "shader_compiler.h"
#include "vulkan_buffer.h"
#include "vulkan_context.h"
#include "vulkan_executable.h"

namespace pcp {
namespace {

using vulkan::BufferPool;
using vulkan::VulkanBuffer;
using vulkan::VulkanContext;

class VulkanBackend : public Backend {
 public:
  // `sources`: the dot tile and emulation switch, environment applied (CreateVulkanBackend).
  VulkanBackend(std::shared_ptr<BufferPool> pool, std::string cache_dir, const VulkanBackendOptions& options,
                vulkan::KernelSourceOptions sources)
      : pool_(std::move(pool)), compiler_(std::move(cache_dir)), sources_(sources) {
    const char* p = std::getenv("PCP_VULKAN_PROFILE");
    profile_ = p != nullptr && *p != '\0' && std::strcmp(p, "0") != 0;
    // Each planner switch: the option, unless its environment variable is "0".
    auto on = [](bool option, const char* variable) {
      const char* v = std::getenv(variable);
      return option && (v == nullptr || std::strcmp(v, "0") != 0);
    };
    switches_.row_kernels = on(options.row_kernels, "PCP_VULKAN_ROW_KERNELS");
    switches_.map_groups = on(options.map_groups, "PCP_VULKAN_MAP_GROUPS");
    switches_.split_reductions = on(options.split_reductions, "PCP_VULKAN_SPLIT_REDUCTIONS");
    switches_.reduction_groups = on(options.reduction_groups, "PCP_VULKAN_REDUCTION_GROUPS");
    switches_.half_buffers = on(options.half_buffers, "PCP_VULKAN_HALF_BUFFERS");
    switches_.attention_groups = on(options.attention_groups, "PCP_VULKAN_ATTENTION_GROUPS");
  }

  std::string Name() const override { return "vulkan"; }
  std::string DeviceDescription() const override {
    const VulkanDeviceInfo& info = pool_->context()->info();
    return absl::StrCat(info.name, " (", VulkanDeviceKindName(info.kind), ", Vulkan ", info.api_version, ")");
  }
  absl::Status Supports(const Function& function) const override {
    return vulkan::CheckSupported(function, pool_->context()->storage_16bit());
  }

  absl::StatusOr<std::unique_ptr<Executable>> Compile(const Function& function) override {
    PCP_ASSIGN_OR_RETURN(std::unique_ptr<vulkan::VulkanExecutable> exe,
                         vulkan::VulkanExecutable::Create(function, pool_, compiler_, profile_, switches_, sources_));
    return std::unique_ptr<Executable>(std::move(exe));
  }

  absl::StatusOr<std::unique_ptr<Buffer>> Allocate(const TensorType& type) override {
    if ((type.dtype == DType::kF16 || type.dtype == DType::kBF16) && !pool_->context()->storage_16bit()) {
      return absl::UnimplementedError(
          absl::StrCat("vulkan backend: no ", MlirName(type.dtype), " buffers (the device lacks 16-bit storage)"));
    }
    const int64_t bytes = type.num_elements() * SizeOf(type.dtype);
    PCP_ASSIGN_OR_RETURN(vulkan::DeviceBuffer b, pool_->Acquire(static_cast<VkDeviceSize>(bytes), false));
    return std::unique_ptr<Buffer>(new VulkanBuffer(type, b, pool_));
  }

  absl::Status CopyIn(const Tensor& source, Buffer& destination) override {
    PCP_ASSIGN_OR_RETURN(VulkanBuffer * dst, Own(&destination));
    if (source.dtype() != dst->type().dtype || source.shape() != dst->type().shape) {
      return absl::InvalidArgumentError(
          absl::StrCat("CopyIn: tensor ", source.TypeString(), " into a buffer of ", dst->type().ToString()));
    }
    return vulkan::UploadToBuffer(*pool_, source.raw_data(), static_cast<VkDeviceSize>(dst->bytes()),
                                  dst->device_buffer());
  }

  absl::StatusOr<Tensor> CopyOut(const Buffer& source) override {
    PCP_ASSIGN_OR_RETURN(VulkanBuffer * src, Own(const_cast<Buffer*>(&source)));
    Tensor t(src->type().dtype, src->type().shape);
    PCP_RETURN_IF_ERROR(vulkan::DownloadFromBuffer(*pool_, src->device_buffer(),
                                                   static_cast<VkDeviceSize>(src->bytes()), t.raw_data()));
    return t;
  }

 private:
  absl::StatusOr<VulkanBuffer*> Own(Buffer* b) const {
    auto* vb = dynamic_cast<VulkanBuffer*>(b);
    if (vb == nullptr || vb->pool() != pool_.get()) {
      return absl::InvalidArgumentError("buffer does not belong to this Vulkan backend");
    }
    return vb;
  }

  std::shared_ptr<BufferPool> pool_;
  vulkan::ShaderCompiler compiler_;
  vulkan::PlanOptions switches_;         // row kernels, map groups, split and grouped reductions, half buffers
  vulkan::KernelSourceOptions sources_;  // dot tile, emulation (the device's abilities: the executable's)
  bool profile_ = false;
};

// VulkanBackendOptions::dot_tile, or PCP_VULKAN_DOT_TILE where set and not empty.
absl::StatusOr<int> DotTile(const VulkanBackendOptions& options) {
  if (options.dot_tile != 0 && options.dot_tile != 64 && options.dot_tile != 128) {
    return absl::InvalidArgumentError(
        absl::StrCat("VulkanBackendOptions::dot_tile ", options.dot_tile, ": expected 0 (by shape), 64 or 128"));
  }
  const char* e = std::getenv("PCP_VULKAN_DOT_TILE");
  if (e == nullptr || *e == '\0') return options.dot_tile;
  if (std::strcmp(e, "64") == 0) return 64;
  if (std::strcmp(e, "128") == 0) return 128;
  return absl::InvalidArgumentError(absl::StrCat("PCP_VULKAN_DOT_TILE='", e, "': expected 64 or 128"));
}

}  // namespace

absl::StatusOr<std::unique_ptr<Backend>> CreateVulkanBackend(VulkanBackendOptions options) {
  vulkan::KernelSourceOptions sources;
  PCP_ASSIGN_OR_RETURN(sources.dot_tile, DotTile(options));
  PCP_ASSIGN_OR_RETURN(std::shared_ptr<VulkanContext> ctx, VulkanContext::Create(options));
  const char* coopmat = std::getenv("PCP_VULKAN_COOPMAT");
  sources.emulate_cooperative_matrix =
      options.emulate_cooperative_matrix || (coopmat != nullptr && std::strcmp(coopmat, "emulate") == 0);
  if (sources.emulate_cooperative_matrix && !ctx->shader_float16()) {
    return absl::UnimplementedError(absl::StrCat("VulkanBackendOptions::emulate_cooperative_matrix: ", ctx->info().name,
                                                 " lacks shaderFloat16 (the kernels keep f16 tiles)"));
  }
  std::string cache_dir = options.shader_cache_dir;
  if (cache_dir.empty()) cache_dir = vulkan::ShaderCompiler::DefaultCacheDir();
  if (cache_dir == "none") cache_dir.clear();
  return std::unique_ptr<Backend>(
      new VulkanBackend(std::make_shared<BufferPool>(std::move(ctx)), cache_dir, options, sources));
}

absl::StatusOr<VulkanSchedule> GetVulkanSchedule(const Executable& exe) {
  const auto* vk = dynamic_cast<const vulkan::VulkanExecutable*>(&exe);
  if (vk == nullptr) return absl::InvalidArgumentError("not an executable of the Vulkan backend");
  const vulkan::VulkanExecutableStats s = vk->stats();
  return VulkanSchedule{.dispatches = s.num_dispatches,
                        .row_kernels = s.num_row_kernels,
                        .map_groups = s.num_map_groups,
                        .split_reductions = s.num_split_reductions,
                        .reduction_groups = s.num_reduction_groups,
                        .work_groups = s.work_groups,
                        .max_bindings = s.max_kernel_bindings,
                        .binding_limit = s.binding_limit};
}

}  // namespace pcp

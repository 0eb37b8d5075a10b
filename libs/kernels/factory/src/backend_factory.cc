#include "pcp/kernels/backend_factory.h"

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "pcp/kernels/cpu_backend.h"
#include "spdlog/spdlog.h"
#ifdef PCP_HAVE_VULKAN
#include "pcp/kernels/vulkan_backend.h"
#endif

namespace pcp {
namespace {

#ifdef PCP_HAVE_VULKAN
// "vulkan" -> best device; "vulkan:1" -> device index 1; "vulkan:h100" -> name substring.
VulkanBackendOptions VulkanOptionsFor(absl::string_view name) {
  VulkanBackendOptions options;
  if (absl::ConsumePrefix(&name, "vulkan:")) {
    int index = 0;
    if (absl::SimpleAtoi(name, &index)) {
      options.device_index = index;
    } else {
      options.device_name = std::string(name);
    }
  }
  return options;
}

// Why "auto" should not use Vulkan here, or "" when a GPU is available.
std::string WhyNotVulkan() {
  absl::StatusOr<std::vector<VulkanDeviceInfo>> devices = ListVulkanDevices();
  if (!devices.ok()) return std::string(devices.status().message());
  if (devices->empty()) return "no Vulkan device";
  std::string seen;
  for (const VulkanDeviceInfo& d : *devices) {
    if (d.usable && (d.kind == VulkanDeviceKind::kDiscreteGpu || d.kind == VulkanDeviceKind::kIntegratedGpu ||
                     d.kind == VulkanDeviceKind::kVirtualGpu)) {
      return "";
    }
    absl::StrAppend(&seen, seen.empty() ? "" : ", ", d.name, " (", VulkanDeviceKindName(d.kind),
                    d.usable ? "" : absl::StrCat(", unusable: ", d.why_unusable), ")");
  }
  return absl::StrCat("the only Vulkan devices are ", seen, ", slower than the CPU backend");
}
#endif

}  // namespace

absl::StatusOr<std::unique_ptr<Backend>> CreateBackend(absl::string_view name, int threads) {
  if (threads < 0) return absl::InvalidArgumentError(absl::StrCat("threads must be >= 0, got ", threads));
  if (name == "cpu") return CreateCpuBackend(CpuBackendOptions{.threads = threads});
  if (name == "vulkan" || absl::StartsWith(name, "vulkan:")) {
#ifdef PCP_HAVE_VULKAN
    return CreateVulkanBackend(VulkanOptionsFor(name));
#else
    return absl::UnavailableError("backend 'vulkan': this build has no Vulkan backend (PCP_VULKAN=OFF)");
#endif
  }
  if (name == "auto") {
#ifdef PCP_HAVE_VULKAN
    const std::string why = WhyNotVulkan();
    if (why.empty()) {
      absl::StatusOr<std::unique_ptr<Backend>> vk = CreateVulkanBackend({});
      if (vk.ok()) {
        spdlog::info("backend auto: using Vulkan on {}", (*vk)->DeviceDescription());
        return vk;
      }
      spdlog::info("backend auto: using the CPU backend because the Vulkan backend failed: {}", vk.status().ToString());
    } else {
      spdlog::info("backend auto: using the CPU backend because {}", why);
    }
#else
    spdlog::info("backend auto: using the CPU backend because this build has no Vulkan backend");
#endif
    return CreateCpuBackend(CpuBackendOptions{.threads = threads});
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown backend '", name, "' (expected cpu, vulkan, vulkan:<index|name> or auto)"));
}

}  // namespace pcp

#include "pcp/kernels/backend_factory.h"

#include "absl/strings/str_cat.h"
#include "pcp/kernels/cpu_backend.h"
#include "spdlog/spdlog.h"

namespace pcp {

absl::StatusOr<std::unique_ptr<Backend>> CreateBackend(absl::string_view name, int threads) {
  if (threads < 0) return absl::InvalidArgumentError(absl::StrCat("threads must be >= 0, got ", threads));
  if (name == "cpu") return CreateCpuBackend(CpuBackendOptions{.threads = threads});
  if (name == "vulkan") {
    return absl::UnavailableError("backend 'vulkan': this build has no Vulkan backend yet");
  }
  if (name == "auto") {
    spdlog::info("backend auto: no Vulkan backend in this build; using the CPU backend");
    return CreateCpuBackend(CpuBackendOptions{.threads = threads});
  }
  return absl::InvalidArgumentError(absl::StrCat("unknown backend '", name, "' (expected cpu, vulkan or auto)"));
}

}  // namespace pcp

// Chooses and creates a backend by name, as jobs and flags spell it.
//
//   PCP_ASSIGN_OR_RETURN(std::unique_ptr<Backend> b, CreateBackend("auto", /*threads=*/0));
//
// "cpu": the CPU backend with `threads` threads (0 = all cores).
// "vulkan": the Vulkan backend on the best device; an error if no Vulkan device is usable.
// "vulkan:N" / "vulkan:NAME": device index N, or the first device whose name contains NAME.
// "auto": Vulkan when a GPU (discrete, integrated or virtual) is usable, else CPU, logging
// one line that says which and why (a CPU-emulated Vulkan device such as lavapipe is slower
// than the CPU backend, so "auto" does not pick it).
#ifndef PCP_KERNELS_BACKEND_FACTORY_H_
#define PCP_KERNELS_BACKEND_FACTORY_H_

#include <memory>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "pcp/kernels/backend.h"

namespace pcp {

absl::StatusOr<std::unique_ptr<Backend>> CreateBackend(absl::string_view name, int threads);

}  // namespace pcp

#endif  // PCP_KERNELS_BACKEND_FACTORY_H_

// The backends every kernels test runs on. Adding a backend to all conformance and
// behaviour tests is one line here; a backend that cannot be created on this machine
// (no device) makes its cases GTEST_SKIP with the creation error as the reason.
#ifndef PCP_TESTS_LIBS_KERNELS_TEST_BACKENDS_H_
#define PCP_TESTS_LIBS_KERNELS_TEST_BACKENDS_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "pcp/kernels/backend.h"
#include "pcp/kernels/cpu_backend.h"
#ifdef PCP_HAVE_VULKAN
#include "pcp/kernels/vulkan_backend.h"
#endif

namespace pcp::testing {

struct TestBackend {
  std::string name;  // used in test names: [A-Za-z0-9]
  std::function<absl::StatusOr<std::unique_ptr<Backend>>()> create;
};

inline const std::vector<TestBackend>& TestBackends() {
  static const auto* backends = new std::vector<TestBackend>{
      {"cpu1", [] { return absl::StatusOr<std::unique_ptr<Backend>>(CreateCpuBackend({.threads = 1})); }},
      {"cpu2", [] { return absl::StatusOr<std::unique_ptr<Backend>>(CreateCpuBackend({.threads = 2})); }},
#ifdef PCP_HAVE_VULKAN
      // Whatever device the loader offers (lavapipe on machines without a GPU); no device: skip.
      {"vulkan", [] { return CreateVulkanBackend({}); }},
#endif
  };
  return *backends;
}

}  // namespace pcp::testing

#endif  // PCP_TESTS_LIBS_KERNELS_TEST_BACKENDS_H_

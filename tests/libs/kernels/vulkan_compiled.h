// Test helper for the Vulkan kernel tests: a function compiled on a backend with its schedule
// (dispatches, work groups: pcp/kernels/vulkan_backend.h), failures reported as test failures.
//
//   Compiled c = CompileOn(*vulkan, f);
//   EXPECT_LE(c.schedule.dispatches, 4u);
#ifndef PCP_TESTS_LIBS_KERNELS_VULKAN_COMPILED_H_
#define PCP_TESTS_LIBS_KERNELS_VULKAN_COMPILED_H_

#include <memory>

#include "gtest/gtest.h"
#include "pcp/kernels/vulkan_backend.h"

namespace pcp {

struct Compiled {
  std::unique_ptr<Executable> exe;  // null when compiling failed (a test failure)
  VulkanSchedule schedule;
};

inline Compiled CompileOn(Backend& backend, const Function& f) {
  Compiled c;
  absl::StatusOr<std::unique_ptr<Executable>> exe = backend.Compile(f);
  EXPECT_TRUE(exe.ok()) << f.name << ": " << exe.status();
  if (!exe.ok()) return c;
  absl::StatusOr<VulkanSchedule> schedule = GetVulkanSchedule(**exe);
  EXPECT_TRUE(schedule.ok()) << schedule.status();
  if (schedule.ok()) c.schedule = *schedule;
  c.exe = *std::move(exe);
  return c;
}

}  // namespace pcp

#endif  // PCP_TESTS_LIBS_KERNELS_VULKAN_COMPILED_H_

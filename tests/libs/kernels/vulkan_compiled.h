// Test helper for the Vulkan kernel tests: a function compiled on a backend with its schedule
// (dispatches, work groups: pcp/kernels/vulkan_backend.h), failures reported as test failures.
//
//   absl::StatusOr<BackendPair> b = CreateBackendPair({.row_kernels = false});  // vs. defaults
//   Compiled c = CompileOn(*vulkan, f);
//   EXPECT_LE(c.schedule.dispatches, 4u);
//   std::vector<Tensor> results = RunTwice(*vulkan, c, args);  // a second run: the same bits
//   std::vector<Tensor> expected = RunOnce(*cpu, f, args);      // any backend
#ifndef PCP_TESTS_LIBS_KERNELS_VULKAN_COMPILED_H_
#define PCP_TESTS_LIBS_KERNELS_VULKAN_COMPILED_H_

#include <cstring>
#include <memory>
#include <vector>

#include "gtest/gtest.h"
#include "pcp/kernels/vulkan_backend.h"

namespace pcp {

// A Vulkan backend with the default options (or `with`) and one with a planner switch off, to
// compare the plans; the device's error when there is none (the caller skips).
struct BackendPair {
  std::unique_ptr<Backend> with, without;
};

inline absl::StatusOr<BackendPair> CreateBackendPair(const VulkanBackendOptions& without,
                                                     const VulkanBackendOptions& with = {}) {
  BackendPair b;
  absl::StatusOr<std::unique_ptr<Backend>> on = CreateVulkanBackend(with);
  if (!on.ok()) return on.status();
  absl::StatusOr<std::unique_ptr<Backend>> other = CreateVulkanBackend(without);
  if (!other.ok()) return other.status();
  b.with = *std::move(on);
  b.without = *std::move(other);
  return b;
}

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

// The same bytes, tensor by tensor.
inline bool SameBits(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].byte_size() != b[i].byte_size() || std::memcmp(a[i].raw_data(), b[i].raw_data(), a[i].byte_size()) != 0) {
      return false;
    }
  }
  return true;
}

// Allocates `args` and the results of `exe`'s function on `backend`, runs `exe` `runs` times
// (each run after the first must give the first's bits) and returns the first run's results;
// what fails is a test failure.
inline std::vector<Tensor> RunExecutable(Backend& backend, Executable& exe, const std::vector<Tensor>& args, int runs) {
  std::vector<Tensor> first;
  const Function& f = exe.function();
  std::vector<std::unique_ptr<Buffer>> owned;
  std::vector<Buffer*> in, out;
  for (const Tensor& a : args) {
    absl::StatusOr<std::unique_ptr<Buffer>> buf = backend.Allocate({a.dtype(), a.shape()});
    EXPECT_TRUE(buf.ok() && backend.CopyIn(a, **buf).ok());
    if (!buf.ok()) return first;
    in.push_back(buf->get());
    owned.push_back(*std::move(buf));
  }
  for (ValueId r : f.results) {
    absl::StatusOr<std::unique_ptr<Buffer>> buf = backend.Allocate(f.type(r));
    EXPECT_TRUE(buf.ok());
    if (!buf.ok()) return first;
    out.push_back(buf->get());
    owned.push_back(*std::move(buf));
  }
  for (int r = 0; r < runs; ++r) {
    absl::Status s = exe.Run(in, out);
    EXPECT_TRUE(s.ok()) << s;
    std::vector<Tensor> results;
    for (Buffer* b : out) {
      absl::StatusOr<Tensor> t = backend.CopyOut(*b);
      EXPECT_TRUE(t.ok()) << t.status();
      if (t.ok()) results.push_back(*std::move(t));
    }
    if (r == 0) {
      first = std::move(results);
    } else {
      EXPECT_TRUE(SameBits(results, first)) << f.name << ": run " << r + 1 << " gave other bits";
    }
  }
  return first;
}

// Runs `c` twice (the second run must give the same bits) and returns the results.
inline std::vector<Tensor> RunTwice(Backend& backend, const Compiled& c, const std::vector<Tensor>& args) {
  if (c.exe == nullptr) return {};
  return RunExecutable(backend, *c.exe, args, 2);
}

// Compiles `f` on any backend (the CPU's too) and runs it once.
inline std::vector<Tensor> RunOnce(Backend& backend, const Function& f, const std::vector<Tensor>& args) {
  absl::StatusOr<std::unique_ptr<Executable>> exe = backend.Compile(f);
  EXPECT_TRUE(exe.ok()) << f.name << ": " << exe.status();
  if (!exe.ok()) return {};
  return RunExecutable(backend, **exe, args, 1);
}

}  // namespace pcp

#endif  // PCP_TESTS_LIBS_KERNELS_VULKAN_COMPILED_H_

// Test-only: compile a function on a CPU backend with given options, run it once, and keep
// what the CPU tests compare (results, the kernel schedule and its counts); and the bitwise
// comparison those tests use, where which NaN comes out of an op on two NaNs is left open.
//
//   CpuRun a = RunOnCpu(f, args, {.threads = 2, .expression_ops = false});
//   CpuRun b = RunOnCpu(f, args, {.threads = 2});
//   EXPECT_TRUE(SameBitsOrBothNaN(a.results[0], b.results[0]));
//   EXPECT_TRUE(AllSameBitsOrBothNaN(a.results, b.results));
#ifndef PCP_TESTS_LIBS_KERNELS_CPU_RUN_H_
#define PCP_TESTS_LIBS_KERNELS_CPU_RUN_H_

#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "pcp/autodiff/ir.h"
#include "pcp/kernels/cpu_backend.h"
#include "pcp/testing/tensor_testing.h"

namespace pcp::testing {

struct CpuRun {
  std::vector<Tensor> results;
  std::string schedule;        // CpuExecutable::DescribeSchedule()
  int fused_instructions = 0;  // CpuExecutableStats
  int kernels = 0;
  absl::Status memory_plan;  // CpuExecutable::CheckMemoryPlan()
};

inline CpuRun RunOnCpu(const Function& f, const std::vector<Tensor>& args, const CpuBackendOptions& options) {
  CpuRun run;
  std::unique_ptr<Backend> backend = CreateCpuBackend(options);
  absl::StatusOr<std::unique_ptr<Executable>> exe = backend->Compile(f);
  EXPECT_TRUE(exe.ok()) << exe.status();
  if (!exe.ok()) return run;
  std::vector<std::unique_ptr<Buffer>> owned;
  std::vector<Buffer*> in, out;
  for (const Tensor& a : args) {
    owned.push_back(*backend->Allocate({a.dtype(), a.shape()}));
    EXPECT_TRUE(backend->CopyIn(a, *owned.back()).ok());
    in.push_back(owned.back().get());
  }
  for (ValueId r : f.results) {
    owned.push_back(*backend->Allocate(f.type(r)));
    out.push_back(owned.back().get());
  }
  absl::Status s = (*exe)->Run(in, out);
  EXPECT_TRUE(s.ok()) << s;
  for (Buffer* b : out) run.results.push_back(*backend->CopyOut(*b));
  const auto* cpu = dynamic_cast<const CpuExecutable*>(exe->get());
  run.schedule = cpu->DescribeSchedule();
  run.fused_instructions = static_cast<int>(cpu->stats().num_fused_instructions);
  run.kernels = static_cast<int>(cpu->stats().num_kernels);
  run.memory_plan = cpu->CheckMemoryPlan();
  return run;
}

// How many times `what` occurs in `text` (e.g. "+ epilogue" in a CpuRun's schedule).
inline int CountOf(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// Bit for bit, except that any NaN equals any NaN: which NaN's payload and sign an op returns
// when both operands are NaN depends on the order the compiler puts the operands of a
// commutative op in (x86 returns the first), and a + (-b) may be computed as a - b; IEEE 754
// leaves both open. The interpreter does not define them either.
inline ::testing::AssertionResult SameBitsOrBothNaN(const Tensor& a, const Tensor& b) {
  if (a.dtype() != DType::kF32 || b.dtype() != DType::kF32 || a.shape() != b.shape()) {
    return BitwiseEqual(a, b) ? ::testing::AssertionSuccess() : ::testing::AssertionFailure() << "differ";
  }
  for (int64_t i = 0; i < a.num_elements(); ++i) {
    const float x = a.data<float>()[i], y = b.data<float>()[i];
    if (std::isnan(x) && std::isnan(y)) continue;
    if (std::memcmp(&x, &y, sizeof(float)) != 0) {
      return ::testing::AssertionFailure() << "element " << i << ": " << x << " vs " << y;
    }
  }
  return ::testing::AssertionSuccess();
}

// SameBitsOrBothNaN for every result of two runs (the same count), naming the first that differs.
inline ::testing::AssertionResult AllSameBitsOrBothNaN(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  if (a.size() != b.size()) return ::testing::AssertionFailure() << a.size() << " vs " << b.size() << " results";
  for (size_t i = 0; i < a.size(); ++i) {
    if (::testing::AssertionResult r = SameBitsOrBothNaN(a[i], b[i]); !r) {
      return ::testing::AssertionFailure() << "result " << i << ": " << r.message();
    }
  }
  return ::testing::AssertionSuccess();
}

}  // namespace pcp::testing

#endif  // PCP_TESTS_LIBS_KERNELS_CPU_RUN_H_

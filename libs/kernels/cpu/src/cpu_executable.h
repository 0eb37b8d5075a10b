// The CPU executable: runs a lowered Program on the caller's buffers.
//
// Results that may be written straight into their result buffers are, and so need no
// arena space; this depends on which result buffers are also argument buffers (state
// updated in place), so the executable keeps one "binding" (which results go direct, and
// the memory plan that follows) per aliasing pattern it has seen, usually one or two.
#ifndef PCP_KERNELS_CPU_CPU_EXECUTABLE_H_
#define PCP_KERNELS_CPU_CPU_EXECUTABLE_H_

#include <memory>
#include <mutex>
#include <vector>

#include "pcp/kernels/cpu_backend.h"
#include "program.h"
#include "thread_pool.h"

namespace pcp::cpu {

// A thread pool and the lock that gives one Run at a time the use of it.
struct SharedPool {
  explicit SharedPool(int threads) : pool(threads) {}
  ThreadPool pool;
  std::mutex run_mutex;
};

class CpuExecutableImpl final : public CpuExecutable {
 public:
  CpuExecutableImpl(Function function, Program program, std::shared_ptr<SharedPool> pool);
  ~CpuExecutableImpl() override;

  const Function& function() const override { return function_; }
  absl::Status Run(absl::Span<Buffer* const> args, absl::Span<Buffer* const> results) override;
  CpuExecutableStats stats() const override;
  std::vector<ArenaBlock> arena_blocks() const override { return current_->blocks; }
  absl::Status CheckMemoryPlan() const override;
  std::string DescribeSchedule() const override;

 private:
  struct Binding {
    // Per result: the arguments whose buffer is the result buffer.
    std::vector<std::vector<int>> aliases;
    std::vector<bool> direct;  // per result: written in place by its kernel
    std::vector<ArenaBlock> blocks;
    std::vector<int> block_storage;  // storage of each block
    std::vector<int64_t> offset;     // per storage, -1 if not in the arena
    int64_t arena_bytes = 0;
  };
  std::unique_ptr<Binding> MakeBinding(std::vector<std::vector<int>> aliases) const;

  Function function_;
  Program program_;
  std::shared_ptr<SharedPool> pool_;
  std::vector<std::vector<int>> readers_;  // per storage: kernels reading it, ascending
  std::vector<std::unique_ptr<Binding>> bindings_;
  Binding* current_ = nullptr;
  uint8_t* arena_ = nullptr;
  int64_t arena_capacity_ = 0;
  std::vector<uint8_t*> scratch_;
  std::vector<uint8_t*> storage_ptrs_;
  // PCP_CPU_PROFILE=1|2|3 in the environment: time every kernel and print them at exit.
  void PrintProfile() const;
  int profile_level_ = 0;
  int64_t profiled_runs_ = 0;
  std::vector<double> kernel_seconds_;
};

}  // namespace pcp::cpu

#endif  // PCP_KERNELS_CPU_CPU_EXECUTABLE_H_

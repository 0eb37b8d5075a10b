// The CPU backend: compiles an IR function into a static schedule of kernels over one
// liveness-planned arena. Chains of elementwise ops (with broadcasts, transposes and slices
// read through strided views, and a trailing reduction) become one fused loop kernel;
// dot_general runs sgemm (the backend's own on AVX2 machines, OpenBLAS's elsewhere); work is
// split over a small spinning thread pool of its own.
//
//   std::unique_ptr<Backend> cpu = CreateCpuBackend({.threads = 2});
//   PCP_ASSIGN_OR_RETURN(std::unique_ptr<Executable> exe, cpu->Compile(train_step));
//   auto* cpu_exe = dynamic_cast<CpuExecutable*>(exe.get());
//   std::printf("arena %lld bytes\n", (long long)cpu_exe->stats().arena_bytes);
//
// OpenBLAS is switched to one thread by CreateCpuBackend (process-wide): the pool splits
// matrix products itself, so OpenBLAS's own threads never compete with the pool's. On CPUs
// OpenBLAS 0.3.21 does not recognise, its kernel choice is corrected (src/openblas_setup.h).
//
// Profiling: with PCP_CPU_PROFILE=1 in the environment every kernel is timed and each
// executable prints its 60 heaviest kernels to stderr when destroyed (2: without the dot
// products; 3: every kernel in schedule order, fused groups with their instructions).
#ifndef PCP_KERNELS_CPU_BACKEND_H_
#define PCP_KERNELS_CPU_BACKEND_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "pcp/kernels/backend.h"

namespace pcp {

struct CpuBackendOptions {
  int threads = 0;  // 0 = all cores (std::thread::hardware_concurrency)
  // Chains of f32 arithmetic inside a loop kernel run as one loop each (superinstructions,
  // src/expression_ops.h); false: one pass per op. Results are the same bits either way.
  bool expression_ops = true;
  // Elementwise ops on row reductions' results (one value per row: LayerNorm's mean and rstd)
  // join the row kernel of the reduction and of their broadcasts' consumers; false: kernels of
  // their own between the row kernels (as before). Results are the same bits either way.
  bool row_values = true;
  // A loop kernel that reads a matrix product's output element by element (GELU over a linear
  // layer's output, a softmax over attention scores, a residual add and LayerNorm) runs over
  // each block of the product right after the block's sgemm call, while it is in cache, inside
  // the product's kernel; false: a kernel of its own after the product. The same bits either way.
  bool epilogues = true;
  // Which single-precision matrix product runs dot_general's blocks. kAuto: the backend's own
  // (src/gemm.h: 6 x 16 AVX2 register tiles; each element one chain of fused multiply-adds in
  // k order) on CPUs with AVX2+FMA and without AVX-512, where it measured faster than
  // OpenBLAS at the GPT's shapes (bench/results/train_step.md); OpenBLAS's sgemm elsewhere,
  // whose AVX-512 kernels are twice as wide. kOwn on a CPU without AVX2+FMA runs OpenBLAS.
  enum class Gemm { kAuto, kOpenBlas, kOwn };
  Gemm gemm = Gemm::kAuto;
};

std::unique_ptr<Backend> CreateCpuBackend(CpuBackendOptions options = {});

// Whether a CPU backend created with this choice runs its products on the own sgemm here.
bool UsesOwnGemm(CpuBackendOptions::Gemm choice);

// What a compiled CPU executable looks like; sizes in bytes.
struct CpuExecutableStats {
  int64_t arena_bytes = 0;         // the arena for the most recent Run's buffer binding
                                   // (before the first Run: results in their own buffers)
  int64_t intermediate_bytes = 0;  // sum of all arena buffers, as if none shared memory
  int64_t constant_bytes = 0;      // literals and iotas materialised at compile time
  int num_instructions = 0;        // in the function
  int num_kernels = 0;             // after fusion
  int num_fused_kernels = 0;       // loop kernels (elementwise, optionally with a reduction)
  int num_fused_instructions = 0;  // IR instructions inside those loop kernels
  int num_dot_kernels = 0;
  int num_copy_kernels = 0;    // materialised views, concatenations, result copies
  int num_direct_results = 0;  // results written straight into their buffers by the
                               // last Run's binding (others are copied at the end)
};

// One arena buffer of a memory plan: the bytes [offset, offset + size) hold a value from
// kernel `first` through kernel `last` (inclusive, schedule positions).
struct ArenaBlock {
  int64_t offset = 0;
  int64_t size = 0;
  int first = 0;
  int last = 0;
  std::string what;  // the value it holds, for messages
};

// The executables CpuBackend::Compile returns (dynamic_cast an Executable to reach these).
class CpuExecutable : public Executable {
 public:
  virtual CpuExecutableStats stats() const = 0;
  // The memory plan of the most recent Run's binding (or the default one before any Run).
  virtual std::vector<ArenaBlock> arena_blocks() const = 0;
  // Checks that no two arena buffers that are live at the same time overlap and that all
  // lie inside the arena; Internal error naming the pair otherwise.
  virtual absl::Status CheckMemoryPlan() const = 0;
  // One line per kernel, in schedule order (for debugging and tests).
  virtual std::string DescribeSchedule() const = 0;
};

}  // namespace pcp

#endif  // PCP_KERNELS_CPU_BACKEND_H_

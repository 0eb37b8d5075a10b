// What lowering produces and the executable runs: storages (parameters, constants, arena
// buffers), accesses (a storage seen through a strided view) and a schedule of kernels.
#ifndef PCP_KERNELS_CPU_PROGRAM_H_
#define PCP_KERNELS_CPU_PROGRAM_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "layout.h"
#include "pcp/autodiff/ir.h"
#include "pcp/kernels/cpu_backend.h"
#include "pcp/tensor/tensor.h"

namespace pcp::cpu {

class ThreadPool;

enum class StorageKind : uint8_t { kParam, kConstant, kArena };

struct Storage {
  StorageKind kind = StorageKind::kArena;
  int index = -1;  // parameter or constant index
  DType dtype = DType::kF32;
  int64_t elements = 0;
  int64_t bytes = 0;
  int producer = -1;       // arena: the kernel that writes it (schedule position)
  bool temporary = false;  // a kernel's scratch: live only while that kernel runs
  std::string name;
};

// A value as a view of a storage. layout.shape has the value's element count and row-major
// order but may be another shape (a reshape of a view that strides cannot express).
struct Access {
  int storage = -1;
  Layout layout;
};

// Everything a kernel needs at run time: the address of every storage (parameters and
// results change between runs), the pool, and per-thread scratch.
struct KernelContext {
  uint8_t* const* storage = nullptr;
  ThreadPool* pool = nullptr;
  uint8_t* const* scratch = nullptr;  // one block of scratch_bytes per pool thread
};

class Kernel {
 public:
  virtual ~Kernel() = default;
  virtual void Run(const KernelContext& ctx) = 0;
  virtual std::string Describe() const = 0;
  virtual int64_t scratch_bytes() const { return 0; }  // per thread

  // Storages read and written. Every element of a storage in same_index_reads is read only
  // before the same linear index of each storage in same_index_writes is written, so such an
  // output may be placed over such an input (an in-place update, params' over params).
  std::vector<int> reads;
  std::vector<int> writes;
  std::vector<int> same_index_reads;
  std::vector<int> same_index_writes;
  enum class Kind : uint8_t { kFused, kDot, kCopy, kOther } kind = Kind::kOther;
  int num_instructions = 0;  // IR instructions it implements
};

struct Program {
  std::vector<Storage> storages;
  std::vector<Tensor> constants;
  std::vector<std::unique_ptr<Kernel>> kernels;
  std::vector<int> param_storage;   // per parameter
  std::vector<int> result_storage;  // per result: a distinct arena storage holding all of it
  int64_t scratch_bytes = 0;        // per thread, the maximum over kernels
  CpuExecutableStats stats;         // static parts (counts, constant bytes)
};

}  // namespace pcp::cpu

#endif  // PCP_KERNELS_CPU_PROGRAM_H_

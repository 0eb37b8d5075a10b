// The loop kernel: a fused group of elementwise ops, run as a tiny register machine over
// blocks of kBlock elements. Each register is an array of one block; a contiguous input is a
// register that points straight into its buffer, a strided view (broadcast, transpose,
// slice) is gathered into one. Each op is one tight, auto-vectorised loop over the block;
// an expression op (expression_ops.h) is one loop for a whole tree of elementwise ops, its
// intermediate values kept in vector registers.
// Optionally the group ends in a reduction whose input is one of its registers, so e.g.
// sum((x - mean)^2) reads x once and never writes the difference.
//
// A row kernel (row_length > 0, at most kMaxRowLength) also reduces rows, the last
// row_length elements of the index space each, inside the block (softmax's max and sum,
// LayerNorm's mean and variance): its blocks hold whole rows (one row beyond kBlock), a row
// reduction is an op whose result register holds one value per row: ops on such values
// (per-row ops: LayerNorm's mean, variance and rstd) run on those registers, one value per
// row (as do loads of their operands from memory), an expand op repeats a value over its row
// where ops on whole rows read its broadcast, and a row store writes one value per row. So
// reductions and what follows them share one pass.
//
// Blocks always start at multiples of the block size of the index space (or of whole rows
// for a reduction), whatever the thread count, so results are identical for every thread count.
#ifndef PCP_KERNELS_CPU_FUSED_KERNEL_H_
#define PCP_KERNELS_CPU_FUSED_KERNEL_H_

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "layout.h"
#include "pcp/autodiff/ir.h"
#include "program.h"

namespace pcp::cpu {

inline constexpr int64_t kBlock = 512;            // elements per register
inline constexpr int64_t kRegBytes = kBlock * 8;  // room for the widest element (i64)
// Rows a row kernel takes (the longest: one row per block, registers of that many elements:
// 4096 f32 values, 16 KiB, a block's registers in L2). Longer rows reduce in kernels of their
// own, which read and write whole tensors between them (GPT-2's 1024-long attention rows did,
// at 5-6 passes over 50 MB per layer, before rows up to this length joined row kernels).
inline constexpr int64_t kMaxRowLength = 4096;
// Parallel loops are cut into this many units per thread, claimed dynamically: the more, the
// less the caller waits at the end for a thread still in its last unit, the more claims and
// cache lines shared at unit edges (4, 8 and 16 timed the same on the GPT train step).
inline constexpr int64_t kUnitsPerThread = 4;

// Source registers of one op at most (an expression op's leaves, expression_ops.h).
inline constexpr int kMaxOperands = 10;

struct FusedOp;
using ElementwiseFn = void (*)(const FusedOp& op, void* const* regs, int64_t n);

struct FusedOp {
  ElementwiseFn fn = nullptr;
  int32_t dst = -1;
  int32_t src[kMaxOperands] = {-1, -1, -1, -1, -1, -1, -1, -1, -1, -1};
  int32_t instruction = -1;  // for messages
  int32_t nodes = 1;         // IR instructions it computes (an expression op: its tree's)
  int64_t row = 0;           // row reductions and expansions: the row length
  bool per_row = false;      // in a row kernel: runs on one value per row (block / row elements)
};

// The loop for `op` with operands of `operand` dtype and a result of `result` dtype, or
// nullptr if the CPU backend does not compute it.
ElementwiseFn GetElementwiseFn(Op op, DType operand, DType result, ComparisonDirection direction);

// The row reduction of a row kernel (f32): dst[r] = init combined with the reduction of row r
// (rows of op.row elements; src[0] the input, src[1] the init value), one value per row,
// combined in the same order as a reduce kernel's trailing reduction (a row longer than
// kBlock in kBlock-long pieces, as that kernel evaluates it). reduce_root.cc.
ElementwiseFn GetRowReduceFn(ReduceKind kind);

// A row value's broadcast over its rows: dst[i] = src[i / op.row] (elements of `elem_size`
// bytes), what the ops on whole rows read of a row reduction or a per-row op. reduce_root.cc.
ElementwiseFn GetRowExpandFn(int64_t elem_size);

struct FusedLoad {
  // kPeriodic: a view that repeats every block (a bias broadcast over rows of a length
  // dividing the block size), read once per task like a scalar.
  enum class Mode : uint8_t { kContiguous, kScalar, kPeriodic, kStrided };
  Access access;  // layout simplified
  int64_t elem_size = 4;
  Mode mode = Mode::kContiguous;
  int32_t reg = -1;
  bool per_row = false;  // in a row kernel: one element per row (a per-row op's operand)
};

struct FusedStore {
  int32_t reg = -1;
  int storage = -1;
  int64_t elem_size = 4;
  int64_t row = 0;  // > 0: a row value (row reduction or per-row op), one element per row of this length
};

// reduce(input register) over the dimensions `dims` of `input_shape`.
struct ReduceRoot {
  int32_t reg = -1;
  ReduceKind kind = ReduceKind::kSum;
  DType dtype = DType::kF32;
  Access init;  // a scalar
  int out_storage = -1;
  Shape input_shape;
  std::vector<int64_t> dims;
};

class FusedKernel : public Kernel {
 public:
  // `n` is the index space (the reduction's input size if there is one). Registers are
  // numbered by the caller: each load and each op result has its own register;
  // `reg_elem_size` gives each one's element size. Buffers are assigned here.
  // `row_length` > 0: a row kernel (no `reduce` then).
  FusedKernel(int64_t n, std::vector<FusedLoad> loads, std::vector<FusedOp> ops, std::vector<FusedStore> stores,
              std::optional<ReduceRoot> reduce, int num_regs, std::string description, int64_t row_length = 0);

  void Run(const KernelContext& ctx) override;
  std::string Describe() const override { return description_; }
  int64_t scratch_bytes() const override { return scratch_bytes_; }

  // Run block by block inside another kernel's parallel loop (a product's epilogue,
  // DotKernel::SetEpilogue): BeginRun once, then RunBlocks for every block of the index space
  // exactly once, from any pool threads, each block after whatever it reads is written. The
  // same blocks as Run, so the same bits. Only for kernels without a reduction across blocks
  // (row kernels' rows lie inside their blocks).
  bool RunsInBlocks() const { return !reduce_; }
  int64_t n() const { return n_; }
  int64_t block() const { return block_; }  // elements per block
  int64_t num_blocks() const { return (n_ + block_ - 1) / block_; }
  // Below this much work Run keeps the kernel on the calling thread.
  bool small() const;
  const std::vector<FusedLoad>& loads() const { return loads_; }
  void BeginRun(const KernelContext& ctx);
  // Blocks [b0, b1) (elements [b0 * block(), min(n(), b1 * block()))) on pool thread `thread`.
  void RunBlocks(const KernelContext& ctx, int thread, int64_t b0, int64_t b1);

 private:
  // The reduction's loop structure: input viewed as [a, r, c] with r reduced, or general.
  struct ReducePlan {
    bool general = false;
    int64_t a = 1, r = 1, c = 1;
    // general: simplified input shape and each dimension's stride in the output (0 if reduced).
    Shape shape;
    std::vector<int64_t> out_strides;
    // Blocking, fixed by the shape alone.
    int64_t rows_per_block = 0;             // c == 1: whole rows per block (0: a row spans blocks)
    int64_t c_chunk = 0, num_c_chunks = 1;  // c > 1: columns per unit
    int64_t r_chunk = 0, num_r_chunks = 1;  // rows of r per unit (> 1 chunk: partial results)
    bool batch_rows = false;                // c > 1 and a block holds several whole rows of c
  };

  int64_t work() const;  // elements x (instructions + loads + stores)
  // A register's scratch buffer: a block of elements of up to 8 bytes (i64), at least kRegBytes.
  int64_t RegBytes() const { return std::max(kBlock, block_) * 8; }
  // Registers of thread `thread` set up for a new range of blocks: filled (scalar and periodic
  // loads) on the thread's first unit of this Run only, since no other kernel runs meanwhile.
  void** SetUpThread(const KernelContext& ctx, int thread);
  // Loads, runs the ops and stores for elements [start, start + n), n <= block_.
  void Evaluate(const KernelContext& ctx, void** regs, int64_t start, int64_t n) const;
  void RunElementwise(const KernelContext& ctx);
  void RunReduce(const KernelContext& ctx);  // reduce_root.cc
  void PlanReduce();                         // reduce_root.cc
  template <typename T, ReduceKind kKind>
  void RunReduceT(const KernelContext& ctx);

  int64_t n_;
  int64_t row_length_ = 0;
  int64_t block_ = kBlock;  // elements per block: kBlock, or whole rows of a row kernel
  std::vector<FusedLoad> loads_;
  std::vector<FusedOp> ops_;
  std::vector<FusedStore> stores_;
  std::optional<ReduceRoot> reduce_;
  ReducePlan plan_;
  int num_regs_;
  std::vector<int32_t> reg_buffer_;  // scratch buffer of each register, -1 for pointers
  int64_t regs_bytes_ = 0;           // the register pointer table at the start of scratch
  int64_t buffers_bytes_ = 0;
  int64_t scratch_bytes_ = 0;
  std::vector<uint8_t> partials_;  // per-chunk results of a split reduction
  // Per store, for the current Run: the op writes straight into the output buffer (which
  // then shares no memory with any input); otherwise into scratch, copied after the block.
  std::vector<uint8_t> direct_store_;
  uint64_t run_ = 0;                  // Runs so far
  std::vector<uint64_t> thread_run_;  // per pool thread: the Run its registers were set up for
  std::string description_;
};

}  // namespace pcp::cpu

#endif  // PCP_KERNELS_CPU_FUSED_KERNEL_H_

// dot_general as (batched) sgemm calls: OpenBLAS's cblas_sgemm, or the backend's own (gemm.h,
// UseOwnGemm) on AVX2 machines. Operands are strided views: free and
// contracting dimensions are merged into matrix rows and columns, and a view whose
// matrix is row- or column-major (any leading dimension) is passed as is with
// CblasNoTrans / CblasTrans, so transposes, head splits and column slices cost nothing.
// An operand that cannot be expressed that way is first packed into a temporary buffer.
// Optionally a bias row is added to each output block as it is computed (AddBias), and a loop
// kernel that reads the product element by element runs over each block right after it
// (SetEpilogue), while the block is in the cache of the core that computed it, and with no
// barrier between product and loop.
// Batches, or row/column blocks of a single product, are spread over the pool; OpenBLAS
// itself runs single-threaded inside each call. The blocks depend on the shapes alone, so a
// result is bitwise the same for every thread count (see Run; the own sgemm's elements do not
// depend on the blocks at all).
#ifndef PCP_KERNELS_CPU_DOT_KERNEL_H_
#define PCP_KERNELS_CPU_DOT_KERNEL_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "fused_kernel.h"
#include "pcp/autodiff/ir.h"
#include "program.h"

namespace pcp::cpu {

class DotKernel : public Kernel {
 public:
  // `lhs` and `rhs` are views in the operands' own shapes; the result is written to
  // `out_storage` through `out_layout` (in the result's shape): contiguous, or e.g. the
  // permutation that makes a following transpose free. Check output_ok() for the latter.
  DotKernel(Access lhs, Access rhs, const DotDims& dims, const Layout& out_layout, int out_storage,
            std::string description);

  // Whether out_layout is one sgemm can write (row-major matrices per batch element).
  bool output_ok() const { return output_ok_; }

  // Bytes of packing buffer operand 0 (lhs) or 1 (rhs) needs; 0 if it is used in place.
  int64_t pack_bytes(int operand) const { return operands_[operand].pack_bytes; }
  // The temporary storage to pack into; must be set for every operand with pack_bytes > 0.
  void set_pack_storage(int operand, int storage);

  // Adds a row vector to every row of the product (the bias of a linear layer):
  // out[.., i, j] = (A·B)[.., i, j] + bias[j]. For a shallow product (K <= 128) the bias is
  // written into each output block and sgemm accumulates onto it (beta = 1: no pass clearing
  // C, no pass adding); deeper products get it added to each block right after its sgemm call,
  // while the block is in cache. `bias` is a view of N contiguous elements (offset into its
  // storage). Only for a single product with a contiguous output (batch 1, output_ok()). The
  // sum is the same as a separate add's, bit for bit.
  bool CanAddBias() const { return batch_ == 1 && output_ok_ && ldc_ == n_; }
  int64_t n() const { return n_; }  // columns of the product (rhs free dimensions)
  void AddBias(int storage, int64_t offset);

  // The loop kernel `loop` run as this kernel's epilogue instead of as a kernel of its own
  // after this one: on several threads, over each output block right after the block's sgemm
  // call (and bias) by the thread that computed it, while it is in that core's cache, any
  // thread taking loop blocks of blocks already written once it has no block left to compute;
  // on one thread, after the whole product (see Run). Possible (CanTakeEpilogue) if the
  // output is contiguous in the product's order, the loop's index space is the output's and it
  // has no reduction across blocks, it reads the output only element i for element i, every
  // unit's output rows are whole blocks of the loop (shapes alone decide both, so the loop
  // computes the same blocks, the same bits, as alone), and the product runs in parallel (or
  // the loop would not). The caller makes sure everything else the loop reads is computed
  // before this kernel runs. This kernel then also reads and writes what the loop does.
  bool CanTakeEpilogue(const FusedKernel& loop) const;
  void SetEpilogue(std::unique_ptr<FusedKernel> loop);
  int out_storage() const { return out_storage_; }

  // Products on the backend's own matrix product (gemm.h) instead of cblas_sgemm; the CPU must
  // have GemmAvailable(). Its results do not depend on the blocks either. A product split into
  // blocks of rows (columns) then packs the operand every block reads whole, the rhs (lhs),
  // once per run, its panels shared out over the pool, into temporary storage of
  // shared_pack_bytes() (0: each block packs what it reads, as sgemm does; a batched product,
  // one block, or a packed operand over kMaxSharedPackBytes).
  void UseOwnGemm();
  int64_t shared_pack_bytes() const { return shared_pack_bytes_; }
  void set_shared_pack_storage(int storage);

  void Run(const KernelContext& ctx) override;
  std::string Describe() const override { return description_; }
  // Per thread: the epilogue's, then (own sgemm) the packing workspace after it, 64-byte aligned.
  int64_t scratch_bytes() const override;

 private:
  struct Operand {
    Access access;           // the operand as given
    Layout pack_view;        // the operand's view permuted to [batch, rows, cols] order
    int64_t pack_bytes = 0;  // > 0: copy pack_view into pack_storage first
    int pack_storage = -1;
    // The matrix seen by sgemm: element (i, j) at offset + i * row_stride + j * col_stride.
    bool trans = false;
    int64_t ld = 1;
    int64_t row_stride = 0, col_stride = 0;
    std::vector<int64_t> batch_offsets;  // per batch element, relative to the base
  };
  int64_t flops() const { return 2 * batch_ * m_ * n_ * k_; }
  // Whether the product's units are spread over the pool (with more than one thread).
  bool Parallel() const;
  // Unit `unit`'s block: batch element bi, rows [m0, m0 + mlen), columns [n0, n0 + nlen)
  // (mlen or nlen 0: an empty unit).
  void UnitBlock(int64_t unit, int64_t* bi, int64_t* m0, int64_t* mlen, int64_t* n0, int64_t* nlen) const;
  // Unit `unit`'s output elements in the product's row-major order, [*e0, *e1) (whole rows
  // of one batch element when the split is by rows); false for an empty unit.
  bool UnitElements(int64_t unit, int64_t* e0, int64_t* e1) const;
  // The loop's blocks over unit `unit`'s output rows: [*b0, *b1).
  void UnitLoopBlocks(int64_t unit, int64_t* b0, int64_t* b1) const;
  int64_t EpilogueScratchBytes() const;  // rounded up to 64
  // Own sgemm: packs the operand shared by all units (shared_pack_bytes_ > 0) into its storage,
  // over the pool; returns the packed operand's index (0 lhs, 1 rhs) and sets *packed, or -1.
  int PackShared(const KernelContext& ctx, const float* const base[2], const float** packed);
  // Runs the units and their loop blocks on the pool (an epilogue, more than one thread).
  void RunSharingLoops(const KernelContext& ctx, absl::FunctionRef<void(int64_t, int)> product);
  // Plans operand `o` (0 = lhs with rows M, cols K; 1 = rhs with rows K, cols N).
  void PlanOperand(int o, const std::vector<int64_t>& batch_dims, const std::vector<int64_t>& row_dims,
                   const std::vector<int64_t>& col_dims, const std::vector<int64_t>& batch_sizes);

  Operand operands_[2];
  int64_t batch_ = 1, m_ = 1, n_ = 1, k_ = 1;
  int out_storage_;
  bool output_ok_ = false;
  int64_t ldc_ = 1;
  std::vector<int64_t> out_offsets_;  // per batch element
  int bias_storage_ = -1;             // AddBias: the row vector, or -1
  int64_t bias_offset_ = 0;
  // Blocks, by the shape alone: each batch element in parts_ blocks of part_size_ rows
  // (split_rows_) or columns (the last one shorter), one pool unit each.
  bool split_rows_ = true;
  int64_t parts_ = 1;
  int64_t part_size_ = 1;
  bool own_gemm_ = false;
  int64_t shared_pack_bytes_ = 0;
  int shared_pack_storage_ = -1;
  std::unique_ptr<FusedKernel> epilogue_;
  // Run with an epilogue over the pool: which units' products are claimed (from the bottom by
  // the calling thread, from the top by the others: [lo, hi) unclaimed, lo in the low half);
  // per unit, whether its product is written (then its loop blocks may be claimed by any
  // thread, not only the one that computed it: no thread waits at the end for another's whole
  // loop) and the next of its loop blocks to claim.
  std::atomic<uint64_t> unclaimed_{0};
  std::unique_ptr<std::atomic<int64_t>[]> next_block_;
  std::unique_ptr<std::atomic<bool>[]> written_;
  std::string description_;
};

}  // namespace pcp::cpu

#endif  // PCP_KERNELS_CPU_DOT_KERNEL_H_

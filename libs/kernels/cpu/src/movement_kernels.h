// Kernels that move data: copying a view into a buffer (materialising a transpose, a result
// copy), concatenate, and the row forms of gather and scatter-add.
#ifndef PCP_KERNELS_CPU_MOVEMENT_KERNELS_H_
#define PCP_KERNELS_CPU_MOVEMENT_KERNELS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "program.h"

namespace pcp::cpu {

// out (contiguous, in the row-major order of the source view) = source.
class CopyKernel : public Kernel {
 public:
  CopyKernel(Access source, int out_storage, int64_t elem_size, std::string description);
  void Run(const KernelContext& ctx) override;
  std::string Describe() const override { return description_; }

 private:
  Access source_;
  int out_storage_;
  int64_t elem_size_;
  std::string description_;
};

// out = concatenate(operands) along `dimension`; operands are views in their own shapes.
class ConcatenateKernel : public Kernel {
 public:
  ConcatenateKernel(std::vector<Access> operands, int64_t dimension, const Shape& result_shape, int out_storage,
                    int64_t elem_size, std::string description);
  void Run(const KernelContext& ctx) override;
  std::string Describe() const override { return description_; }

 private:
  std::vector<Access> operands_;
  std::vector<Layout> destinations_;  // where each operand goes in the output
  int out_storage_;
  int64_t elem_size_;
  std::string description_;
};

// out[i, :] = table[clamp(indices[i]), :]. table and indices are contiguous.
class GatherKernel : public Kernel {
 public:
  GatherKernel(Access table, int64_t rows, int64_t row_elems, int64_t elem_size, Access indices, DType index_type,
               int64_t num_indices, int out_storage, std::string description);
  void Run(const KernelContext& ctx) override;
  std::string Describe() const override { return description_; }

 private:
  Access table_, indices_;
  int64_t rows_, row_bytes_, elem_size_, num_indices_;
  DType index_type_;
  int out_storage_;
  std::string description_;
};

// out = operand; out[indices[i], :] += updates[i, :] for in-range indices. operand is any
// view; indices and updates are contiguous.
class ScatterKernel : public Kernel {
 public:
  ScatterKernel(Access operand, Access indices, DType index_type, Access updates, DType dtype, int64_t rows,
                int64_t row_size, int64_t num_indices, int out_storage, std::string description);
  void Run(const KernelContext& ctx) override;
  std::string Describe() const override { return description_; }

 private:
  template <typename T>
  void AddRows(const KernelContext& ctx, T* out) const;

  Access operand_, indices_, updates_;
  DType index_type_, dtype_;
  int64_t rows_, row_size_, num_indices_;
  int out_storage_;
  std::string description_;
};

}  // namespace pcp::cpu

#endif  // PCP_KERNELS_CPU_MOVEMENT_KERNELS_H_

// Lowering: an IR function (already verified and checked by CpuBackend::Supports) to a
// Program: storages, and kernels in schedule order (fusion.h decides groups and order).
//
// Every value is reached through an Access: parameters and kernel outputs are storages,
// views and reshapes are layouts over their operand's storage, constants and iotas are
// storages filled at compile time. A consumer that needs a layout a view cannot give
// (sgemm operands, gather tables, reshapes strides cannot express) gets a copy kernel
// first. Each result ends up in a distinct arena storage of its own (copied there if it
// is a parameter, a constant, a view or another result's value), which the executable
// then places directly in the result buffer where that is safe.
#ifndef PCP_KERNELS_CPU_LOWERING_H_
#define PCP_KERNELS_CPU_LOWERING_H_

#include "absl/status/statusor.h"
#include "pcp/autodiff/ir.h"
#include "program.h"

namespace pcp::cpu {

struct LoweringOptions {
  // Trees of f32 arithmetic in a loop kernel become expression ops (expression_fusion.h);
  // false: one pass per op (the same results; tests compare the two).
  bool expression_ops = true;
  // Per-row ops join row groups (fusion.h, FusionOptions::row_values).
  bool row_values = true;
  // A loop kernel that reads a product's output element by element runs over each of the
  // product's output blocks right after it, inside the product's kernel (DotKernel::SetEpilogue);
  // false: a kernel of its own. The same bits either way.
  bool epilogues = true;
  // Products run on the backend's own matrix product (gemm.h; the CPU must have
  // GemmAvailable()) instead of OpenBLAS's sgemm.
  bool own_gemm = false;
};

absl::StatusOr<Program> Lower(const Function& function, LoweringOptions options = {});

}  // namespace pcp::cpu

#endif  // PCP_KERNELS_CPU_LOWERING_H_

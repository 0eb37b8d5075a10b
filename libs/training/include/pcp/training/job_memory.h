// How much memory a job needs, estimated from its spec alone (no data read, nothing
// allocated), so that a service can refuse a job before it tries to run it.
//
//   PCP_ASSIGN_OR_RETURN(JobMemoryEstimate need, EstimateJobMemory(job));
//   PCP_RETURN_IF_ERROR(CheckMemoryBudgets(need, MemoryBudgets{.worker_bytes = 8LL << 30,
//                                                              .shepherd_bytes = 16LL << 30}));
//   // InvalidArgument: "job 'big' needs an estimated 320.0 PiB at each worker (...), over the
//   // worker memory budget of 8.0 GiB"
//
// The estimate is float32 throughout and errs high:
//   parameters P (GPT, lm_head tied to wte) = V*C + T*C + L*(12*C^2 + 13*C) + 2*C with biases,
//                                             V*C + T*C + L*(12*C^2 + 2*C) + C without
//   worker   = 4 bytes * (6*P            θ, gradient, AdamW m and v, θ at the round's start, Δ
//                         + B*T*(L*(34*C + 4*H*T) + 3*V + 4*C))   activations, forward+backward
//   shepherd = 4 bytes * (3*P + D          θ, outer momentum, a snapshot, and the Δs: D = workers
//                                           × P (⌈P / fragments⌉ with Streaming DiLoCo), or with
//                                           streaming aggregation (delta_sum.h) one sum of that size
//                         + B*T*(L*(17*C + 2*H*T) + 2*V))  the validation forward pass
// (B batch_size, T block_size, C n_embd, H n_head, L n_layer, V vocab_size; a vocab_size of 0,
// not yet known from the data, counts as 1.) An imported model (model.stablehlo) has P = its
// trainable elements and A = the elements of every value of its forward:
//   worker = 4 bytes * (6*P + 2*A),  shepherd = 4 bytes * (3*P + D + A). Every product is overflow-checked: a spec whose
// sizes overflow int64 is InvalidArgument.
#ifndef PCP_TRAINING_JOB_MEMORY_H_
#define PCP_TRAINING_JOB_MEMORY_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "pcp/training/job_config.h"

namespace pcp {

struct JobMemoryEstimate {
  std::string job_name;
  int64_t parameters = 0;
  int64_t worker_bytes = 0;    // at each worker
  int64_t shepherd_bytes = 0;  // at the shepherd, for this job
};

// InvalidArgument naming the sizes if a product overflows int64.
absl::StatusOr<JobMemoryEstimate> EstimateJobMemory(const JobConfig& config);

struct MemoryBudgets {
  int64_t worker_bytes = 0;    // <= 0: not checked
  int64_t shepherd_bytes = 0;  // <= 0: not checked
};
// InvalidArgument naming the estimate and the budget it exceeds.
absl::Status CheckMemoryBudgets(const JobMemoryEstimate& need, const MemoryBudgets& budgets);

// "1.5 GiB", "320.0 PiB": binary units, one decimal.
std::string FormatBytes(int64_t bytes);

}  // namespace pcp

#endif  // PCP_TRAINING_JOB_MEMORY_H_

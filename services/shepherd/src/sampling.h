// Private: Admin.Sample's work, without gRPC: text from a job's parameters, as nanoGPT's
// sample.py (and `pcp-local sample`) generates it.
//
//   std::shared_ptr<const ParamsSnapshot> snap = coordinator.snapshot();   // running job
//   PCP_ASSIGN_OR_RETURN(snap, SnapshotFromCheckpoint("job-0003", path));  // finished job
//   PCP_ASSIGN_OR_RETURN(v1::SampleResponse r, SampleText(*snap, request, /*threads=*/1));
#ifndef PCP_SHEPHERD_SRC_SAMPLING_H_
#define PCP_SHEPHERD_SRC_SAMPLING_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "pcp/autodiff/ir.h"
#include "pcp/models/gpt_config.h"
#include "pcp/tensor/tensor.h"
#include "pcp/training/job_config.h"
#include "pcp/training/tokenizer.h"
#include "pcp/v1/admin.pb.h"

namespace pcp::shepherd {

// θ of a job at some round.
struct ParamsSnapshot {
  std::string job_id;
  uint64_t round = 0;
  bool final = false;
  std::optional<GPTConfig> model;  // the built-in GPT's; nullopt: an imported model
  // An imported model's sampling function (model.logits, stablehlo_model.h); null when it has
  // none, and then it cannot be sampled.
  std::shared_ptr<const Function> imported_logits;
  std::optional<Tokenizer> tokenizer;  // none: bytes
  SampleConfig sample;                 // the job's defaults
  std::vector<std::string> names;
  std::vector<Tensor> params;  // never modified once published
};

// Reads a checkpoint written by the shepherd (checkpoint_store.h).
absl::StatusOr<std::shared_ptr<const ParamsSnapshot>> SnapshotFromCheckpoint(const std::string& job_id,
                                                                             const std::string& path, bool final);

// FailedPrecondition for a model without logits ("job X: the model is an imported StableHLO
// loss function without logits; ..."); InvalidArgument for out-of-range options (max_new_tokens > 10000, temperature <= 0) or a
// prompt the tokenizer cannot encode.
absl::StatusOr<v1::SampleResponse> SampleText(const ParamsSnapshot& snapshot, const v1::SampleRequest& request,
                                              int threads);

}  // namespace pcp::shepherd

#endif  // PCP_SHEPHERD_SRC_SAMPLING_H_

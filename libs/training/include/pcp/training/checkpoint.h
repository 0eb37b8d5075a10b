// Model checkpoints as safetensors that PyTorch tooling opens directly: parameter names are
// nanoGPT's state_dict keys in PyTorch layouts (Linear weight = [out, in]), plus
// "lm_head.weight" (a copy of the tied wte, so nanoGPT's strict load_state_dict accepts the
// file). PCP's own facts travel in the safetensors "__metadata__" (all strings):
//   pcp.format = "pcp-gpt-1", pcp.model = ModelSourceJson() (GptConfigToJson() for a GPT, the
//   module's file name, function and content hash for an imported model), pcp.job = the job YAML,
//   pcp.tokenizer = Tokenizer::Serialize(),
//   pcp.iter, pcp.val_loss, ... (callers may add more).
// Optimizer state goes to a second file beside it ("m.<name>", "v.<name>", metadata pcp.step).
//
//   PCP_RETURN_IF_ERROR(WriteModelCheckpoint(dir + "/ckpt.safetensors", names, params, meta));
//   PCP_ASSIGN_OR_RETURN(ModelCheckpoint ckpt, ReadModelCheckpoint(path));
#ifndef PCP_TRAINING_CHECKPOINT_H_
#define PCP_TRAINING_CHECKPOINT_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "pcp/autodiff/ir.h"
#include "pcp/models/gpt_config.h"
#include "pcp/tensor/safetensors.h"
#include "pcp/training/job_config.h"

namespace pcp {

inline constexpr char kCheckpointFormat[] = "pcp-gpt-1";
inline constexpr char kTiedHeadName[] = "lm_head.weight";
inline constexpr char kTiedEmbeddingName[] = "transformer.wte.weight";

struct ModelCheckpoint {
  std::vector<NamedTensor> params;  // in file order, without lm_head.weight
  SafetensorsMetadata metadata;
  // The metadata value for `key`, or "" if absent.
  std::string Meta(absl::string_view key) const;
};

// Writes atomically (temp file, fsync, rename). `metadata` gets pcp.format added.
absl::Status WriteModelCheckpoint(const std::string& path, const std::vector<std::string>& names,
                                  const std::vector<Tensor>& params, SafetensorsMetadata metadata);
absl::StatusOr<ModelCheckpoint> ReadModelCheckpoint(const std::string& path);

// Orders the checkpoint's tensors as `names` (the program's parameter order), checking every
// name is present; extra tensors are an error.
absl::StatusOr<std::vector<Tensor>> ParamsInOrder(const ModelCheckpoint& checkpoint,
                                                  const std::vector<std::string>& names);

// {"vocab_size":65,"block_size":64,"n_layer":4,"n_head":4,"n_embd":128,"bias":true}
std::string GptConfigToJson(const GPTConfig& config);
absl::StatusOr<GPTConfig> GptConfigFromJson(absl::string_view json);

// The checkpoint metadata pcp.model: GptConfigToJson for a GPT, else
// {"stablehlo":"nanogpt_2l.mlir","function":"main","sha256":"sha256:..."}.
std::string ModelSourceJson(const ModelConfig& model);
// OK when a checkpoint's pcp.model (`json`) was written for `model`: the same GPT sizes, or
// the same module (file name, function and content hash). FailedPrecondition naming both
// otherwise.
absl::Status CheckModelSource(const ModelConfig& model, absl::string_view json);

// What sampling an imported model needs, found again from a checkpoint's job (its pcp.job,
// the effective YAML with absolute paths): the job parsed and its module imported (the files
// must still be where the job named them). `logits` (model.logits, stablehlo_model.h) is
// nullopt when the job named none; `names` are the trainable parameters in its order.
// FailedPrecondition when the module is no longer the one `model_json` (the checkpoint's
// pcp.model) records.
struct ImportedSampling {
  std::optional<Function> logits;
  std::vector<std::string> names;
};
absl::StatusOr<ImportedSampling> ImportedSamplingOf(absl::string_view job_yaml, absl::string_view model_json);
// True when pcp.model names an imported model (such a model has no logits: no sampling).
bool IsImportedModelSource(absl::string_view json);

absl::Status WriteOptimizerState(const std::string& path, const std::vector<std::string>& names,
                                 const std::vector<Tensor>& m_then_v, int64_t step);

}  // namespace pcp

#endif  // PCP_TRAINING_CHECKPOINT_H_

// DiLoCo checkpoints of a job, crash-consistent: each checkpoint is a folder written in
// full before a one-line pointer file is replaced atomically to name it, so a reader (a
// restarted shepherd) sees either the previous checkpoint or the new one, never a mix.
//
//   <job_dir>/checkpoints/round-000010/ckpt.safetensors   θ with nanoGPT names (checkpoint.h):
//                                                          `pcp-local sample` and PyTorch read it
//   <job_dir>/checkpoints/round-000010/outer.safetensors  outer Nesterov momentum ("momentum.<name>")
//   <job_dir>/checkpoints/round-000010/state.json         round, slots (supervisor id, sampler
//                                                          seed and cursor), tokens, losses,
//                                                          screening's median norms
//   <job_dir>/checkpoints/LATEST                          "round-000010"
//
//   DilocoCheckpoint ckpt{.state = state, .params = theta, .momentum = outer.momentum()};
//   PCP_ASSIGN_OR_RETURN(std::string path, WriteDilocoCheckpoint(job_dir, names, ckpt, meta));
//   PCP_ASSIGN_OR_RETURN(std::optional<DilocoCheckpoint> latest, ReadLatestDilocoCheckpoint(job_dir, names));
//
// The two newest checkpoint folders are kept; older ones are removed after the pointer moves.
#ifndef PCP_SHEPHERD_CHECKPOINT_STORE_H_
#define PCP_SHEPHERD_CHECKPOINT_STORE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "pcp/tensor/safetensors.h"
#include "pcp/tensor/tensor.h"

namespace pcp::shepherd {

// One worker slot of a job: who holds it and where its data stream stands.
struct SlotState {
  std::string supervisor_id;    // "" = never claimed
  uint64_t sampler_seed = 0;    // MixSeed(job seed, slot)
  uint64_t sampler_cursor = 0;  // batches drawn so far from the slot's shard
  uint64_t rounds_done = 0;     // rounds whose result from this slot went into θ
  bool operator==(const SlotState&) const = default;
};

// Everything besides tensors that a resumed job needs.
struct RunState {
  uint64_t round = 0;  // rounds completed (θ is the result of round `round`)
  std::string program_hash;
  std::vector<SlotState> slots;
  uint64_t tokens_processed = 0;
  std::optional<double> train_loss;
  std::optional<double> val_loss;
  uint64_t val_round = 0;
  // Δ screening's per-round median norms, oldest first (pcp/diloco/screening.h DeltaScreen).
  std::vector<double> screen_medians;
  bool operator==(const RunState&) const = default;
};

struct DilocoCheckpoint {
  RunState state;
  std::vector<Tensor> params;    // θ, in program order
  std::vector<Tensor> momentum;  // outer momentum, same order
  std::string model_source;      // read only: the params file's pcp.model (ModelSourceJson)
};

// Writes round `ckpt.state.round`'s folder, then points LATEST at it. `metadata` goes into
// ckpt.safetensors besides pcp.round (pcp.model, pcp.job, pcp.tokenizer, ...). Returns the
// path of ckpt.safetensors.
absl::StatusOr<std::string> WriteDilocoCheckpoint(const std::string& job_dir, const std::vector<std::string>& names,
                                                  const DilocoCheckpoint& ckpt, SafetensorsMetadata metadata);

// The checkpoint LATEST names, with tensors in `names` order; nullopt when the job has none.
// Errors for a checkpoint that exists but is unreadable or does not match `names`.
absl::StatusOr<std::optional<DilocoCheckpoint>> ReadLatestDilocoCheckpoint(const std::string& job_dir,
                                                                           const std::vector<std::string>& names);

// Path of the params file of the latest checkpoint, or "" when none.
std::string LatestCheckpointPath(const std::string& job_dir);

}  // namespace pcp::shepherd

#endif  // PCP_SHEPHERD_CHECKPOINT_STORE_H_

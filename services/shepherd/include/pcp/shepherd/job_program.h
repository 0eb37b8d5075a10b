// What the shepherd derives from a job before its first round: the data, the training
// program (model_program.h: the built-in GPT or an imported StableHLO model) as MLIR text with its content hash, the parameter list, and per worker slot the
// data shard (a round's learning rates: pcp/training/round_budget.h).
//
//   PCP_ASSIGN_OR_RETURN(PreparedJob job, PrepareJob(validated.config, std::move(data), data_roots));
//   job.program_hash;   // Sha256ContentHash(*job.program_text): "sha256:3f1c..."
//   PCP_ASSIGN_OR_RETURN(std::vector<Tensor> theta, TakeInitialParams(job));
//   PCP_ASSIGN_OR_RETURN(ShardPlan shard, ShardForSlot(job, /*slot=*/1, /*world=*/2));
#ifndef PCP_SHEPHERD_JOB_PROGRAM_H_
#define PCP_SHEPHERD_JOB_PROGRAM_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "pcp/rpc/tensor_proto.h"
#include "pcp/training/dataset.h"
#include "pcp/training/job_config.h"
#include "pcp/training/model_program.h"
#include "pcp/v1/training.pb.h"

namespace pcp::shepherd {

struct PreparedJob {
  JobConfig config;  // model.vocab_size resolved from the data
  Dataset data;
  ModelProgram program;
  std::shared_ptr<const std::string> program_text;  // PrintFunction(program.train_step)
  std::string program_hash;
  std::vector<std::string> param_names;  // train_step order
  std::vector<TensorSpec> param_specs;
  // An imported model's sampling function (program.logits, shared with every published
  // snapshot); null for the built-in GPT (sampled through its GPTConfig) and for imported
  // models without model.logits.
  std::shared_ptr<const Function> imported_logits;
};

// Builds and prints the program of `config` (validated, its vocab_size resolved: ValidateJob)
// over `data` (its LoadJobDataset); an imported model's files are read through `data_roots`.
// Slow (seconds for large models).
absl::StatusOr<PreparedJob> PrepareJob(JobConfig config, Dataset data, const DataRoots& data_roots);

// The model's initial values (nanoGPT's initialisation with the job's seed, or an imported
// model's params file / init rule), in program order, moved out of job.program (so the
// shepherd holds them once, as θ); a second call is an error.
absl::StatusOr<std::vector<Tensor>> TakeInitialParams(PreparedJob& job);

// A slot's data: the DataShard for its Assignment, and for inline shards the bytes to send.
struct ShardPlan {
  v1::DataShard shard;
  std::shared_ptr<const std::string> inline_bytes;  // null for shared-file shards
  uint64_t num_tokens = 0;
};
// Slot `slot` of `world` gets training tokens [n*slot/world, n*(slot+1)/world) (Dataset::Shard),
// or all n of them when SlotsSampleWholeData; inline (u16 little-endian) unless the job's data is
// declared shared.
absl::StatusOr<ShardPlan> ShardForSlot(const PreparedJob& job, int64_t slot, int64_t world);

// Whether every slot samples the whole training set (each with its own seed) instead of its
// 1/world shard: when slots run unequal shares of the steps (a time budget, or asynchronous
// rounds), as uneven workers do. A shard's batches are drawn in proportion to its worker's
// speed, so with shards a worker 3x slower would leave a third of the data under-trained (issue
// 32: val 1.87 against 1.78 at equal tokens); from the whole set every token is as likely to be
// drawn whoever runs the steps. Inline data then sends each worker the whole set (a shared
// file: only the range).
bool SlotsSampleWholeData(const JobConfig& config);

v1::Hyperparameters HyperparametersOf(const JobConfig& config);

// The global index of round `round`'s first inner step (DiLoCoConfig::FirstStep; StartRound's
// first_step, for logs). The round's learning rates: LearningRatesOfRound (round_budget.h).
uint64_t FirstStepOfRound(const JobConfig& config, uint64_t round);

}  // namespace pcp::shepherd

#endif  // PCP_SHEPHERD_JOB_PROGRAM_H_

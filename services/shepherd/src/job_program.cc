#include "pcp/shepherd/job_program.h"

#include "absl/strings/str_cat.h"
#include "pcp/autodiff/text.h"
#include "pcp/base/sha256.h"
#include "pcp/base/status_macros.h"
#include "spdlog/spdlog.h"

namespace pcp::shepherd {

absl::StatusOr<PreparedJob> PrepareJob(JobConfig config, Dataset data, const DataRoots& data_roots) {
  PCP_ASSIGN_OR_RETURN(ModelProgram program, BuildJobProgram(config, data_roots), _ << "building the training program");
  for (const std::string& w : program.warnings) spdlog::warn("job {}: {}", config.name, w);
  PreparedJob job{.config = std::move(config), .data = std::move(data), .program = std::move(program)};
  auto text = std::make_shared<std::string>(PrintFunction(job.program.train_step));
  job.program_hash = Sha256ContentHash(*text);
  job.program_text = std::move(text);
  if (job.config.model.imported() && job.program.logits.has_value()) {
    job.imported_logits = std::make_shared<const Function>(*job.program.logits);
  }
  for (size_t i = 0; i < job.program.param_names.size(); ++i) {
    const TensorType& type = job.program.param_types[i];
    job.param_names.push_back(job.program.param_names[i]);
    job.param_specs.push_back(TensorSpec{job.program.param_names[i], type.dtype, type.shape});
  }
  return job;
}

absl::StatusOr<std::vector<Tensor>> TakeInitialParams(PreparedJob& job) {
  ModelProgram& p = job.program;
  if (p.initial_params.size() != job.param_specs.size()) {
    return absl::InternalError(absl::StrCat("the model has ", p.initial_params.size(),
                                            " initial values, train_step takes ", job.param_specs.size(),
                                            " parameters"));
  }
  return std::move(p.initial_params);
}

bool SlotsSampleWholeData(const JobConfig& config) {
  return config.diloco.time_budget.enabled() || config.diloco.mode == diloco::RoundMode::kAsync;
}

absl::StatusOr<ShardPlan> ShardForSlot(const PreparedJob& job, int64_t slot, int64_t world) {
  const int64_t block = job.config.model.block_size;
  if (slot < 0 || slot >= world) {
    return absl::InvalidArgumentError(absl::StrCat("slot ", slot, " of ", world, ": out of range"));
  }
  // The part of the training set the slot samples: shard `index` of `count`.
  const bool whole = SlotsSampleWholeData(job.config);
  const int64_t index = whole ? 0 : slot, count = whole ? 1 : world;
  PCP_ASSIGN_OR_RETURN(TokenSequence tokens, job.data.Shard(index, count, block),
                       _ << "shard " << index << " of " << count);
  ShardPlan plan;
  plan.num_tokens = static_cast<uint64_t>(tokens.size());
  if (!job.config.data.shared) {
    auto bytes = std::make_shared<std::string>();
    bytes->resize(static_cast<size_t>(tokens.size()) * 2);
    for (int64_t i = 0; i < tokens.size(); ++i) {
      (*bytes)[2 * i] = static_cast<char>(tokens[i] & 0xff);
      (*bytes)[2 * i + 1] = static_cast<char>(tokens[i] >> 8);
    }
    v1::InlineShard* inline_shard = plan.shard.mutable_inline_tokens();
    inline_shard->set_encoding(v1::TOKEN_ENCODING_U16_LE);
    inline_shard->set_num_tokens(plan.num_tokens);
    plan.inline_bytes = std::move(bytes);
    return plan;
  }
  const int64_t n = job.data.train().size();
  v1::SharedFileShard* shared = plan.shard.mutable_shared_file();
  shared->set_path(job.config.data.path);
  shared->set_begin_token(static_cast<uint64_t>(n * index / count));
  shared->set_end_token(static_cast<uint64_t>(n * (index + 1) / count));
  switch (job.config.data.format) {
    case DataFormat::kBin: shared->set_format(v1::SHARED_FILE_FORMAT_TOKENS_U16_LE); break;
    case DataFormat::kTextByte: shared->set_format(v1::SHARED_FILE_FORMAT_TEXT_BYTE); break;
    case DataFormat::kTextChar:
      shared->set_format(v1::SHARED_FILE_FORMAT_TEXT_CHAR);
      if (job.data.tokenizer().has_value()) shared->set_char_vocabulary(job.data.tokenizer()->chars());
      break;
  }
  return plan;
}

v1::Hyperparameters HyperparametersOf(const JobConfig& c) {
  v1::Hyperparameters h;
  h.set_inner_steps(static_cast<uint32_t>(c.diloco.max_steps_per_round()));
  h.set_batch_size(static_cast<uint32_t>(c.training.batch_size));
  h.set_block_size(static_cast<uint32_t>(c.model.block_size));
  h.set_seed(static_cast<uint64_t>(c.training.seed));
  h.set_beta1(c.optimizer.beta1);
  h.set_beta2(c.optimizer.beta2);
  h.set_eps(c.optimizer.eps);
  h.set_weight_decay(c.optimizer.weight_decay);
  h.set_grad_clip(c.optimizer.grad_clip);
  return h;
}

uint64_t FirstStepOfRound(const JobConfig& config, uint64_t round) {
  return static_cast<uint64_t>(config.diloco.FirstStep(round));
}

}  // namespace pcp::shepherd

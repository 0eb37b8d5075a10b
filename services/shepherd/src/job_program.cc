#include "pcp/shepherd/job_program.h"

#include "absl/strings/str_cat.h"
#include "pcp/autodiff/text.h"
#include "pcp/base/sha256.h"
#include "pcp/base/status_macros.h"
#include "pcp/models/gpt.h"

namespace pcp::shepherd {
namespace {

AdamWConfig AdamWOf(const OptimizerConfig& o) {
  return AdamWConfig{.beta1 = o.beta1, .beta2 = o.beta2, .eps = o.eps, .weight_decay = o.weight_decay,
                     .grad_clip = o.grad_clip};
}

}  // namespace

absl::StatusOr<PreparedJob> PrepareJob(JobConfig config, const DataRoots& data_roots) {
  PCP_ASSIGN_OR_RETURN(Dataset data, LoadJobDataset(&config, data_roots), _ << "loading the job's data");
  PCP_ASSIGN_OR_RETURN(GptProgram program,
                       BuildGptProgram(config.model.ToGPTConfig(), config.training.batch_size, AdamWOf(config.optimizer)),
                       _ << "building the training program");
  PreparedJob job{.config = std::move(config), .data = std::move(data), .program = std::move(program)};
  auto text = std::make_shared<std::string>(PrintFunction(job.program.train_step));
  job.program_hash = Sha256ContentHash(*text);
  job.program_text = std::move(text);
  const Function& step = job.program.train_step;
  const size_t p = (step.params.size() - 4) / 3;
  for (size_t i = 0; i < p; ++i) {
    const TensorType& type = step.type(step.params[i]);
    job.param_names.push_back(step.param_names[i]);
    job.param_specs.push_back(TensorSpec{step.param_names[i], type.dtype, type.shape});
  }
  return job;
}

absl::StatusOr<std::vector<Tensor>> InitialParams(const PreparedJob& job) {
  PCP_ASSIGN_OR_RETURN(std::vector<NamedTensor> init,
                       InitGptParams(job.config.model.ToGPTConfig(), static_cast<uint64_t>(job.config.training.seed)));
  if (init.size() != job.param_specs.size()) {
    return absl::InternalError(absl::StrCat("the model has ", init.size(), " parameters, train_step takes ",
                                            job.param_specs.size()));
  }
  std::vector<Tensor> out;
  for (size_t i = 0; i < init.size(); ++i) {
    const TensorSpec& spec = job.param_specs[i];
    if (init[i].name != spec.name || init[i].tensor.dtype() != spec.dtype || init[i].tensor.shape() != spec.shape) {
      return absl::InternalError(absl::StrCat("parameter ", i, ": initialised '", init[i].name, "' ",
                                              init[i].tensor.TypeString(), ", train_step takes '", spec.name, "' ",
                                              TypeString(spec.dtype, spec.shape)));
    }
    out.push_back(std::move(init[i].tensor));
  }
  return out;
}

absl::StatusOr<ShardPlan> ShardForSlot(const PreparedJob& job, int64_t slot, int64_t world) {
  const int64_t block = job.config.model.block_size;
  PCP_ASSIGN_OR_RETURN(TokenSequence tokens, job.data.Shard(slot, world, block),
                       _ << "shard " << slot << " of " << world);
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
  shared->set_begin_token(static_cast<uint64_t>(n * slot / world));
  shared->set_end_token(static_cast<uint64_t>(n * (slot + 1) / world));
  switch (job.config.data.format) {
    case DataFormat::kBin:
      shared->set_format(v1::SHARED_FILE_FORMAT_TOKENS_U16_LE);
      break;
    case DataFormat::kTextByte:
      shared->set_format(v1::SHARED_FILE_FORMAT_TEXT_BYTE);
      break;
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

std::vector<float> RoundLearningRates(const JobConfig& config, uint64_t round) {
  const LrSchedule schedule = config.optimizer.Schedule();
  const uint64_t first = FirstStepOfRound(config, round);
  std::vector<float> lrs;
  for (int64_t i = 0; i < config.diloco.StepsOfRound(round); ++i) {
    lrs.push_back(static_cast<float>(schedule.At(static_cast<int64_t>(first) + i)));
  }
  return lrs;
}

}  // namespace pcp::shepherd

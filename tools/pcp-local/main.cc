// pcp-local: train a job in one process (no cluster), evaluate its loss, and sample text from
// a checkpoint.
//
//   pcp-local train config/jobs/shakespeare_char.yaml [--max_iters=N] [--out_dir=DIR]
//                   [--threads=N] [--backend=cpu|vulkan|auto]
//     (writes out_dir/ckpt.safetensors and out_dir/history.csv, the run's record)
//   pcp-local eval JOB.yaml [--params=P.safetensors] [--batch=B.safetensors]
//     (prints the forward's loss, %.6f, for the parameters (default: the job's initial values)
//      on the batch ("tokens" and "targets", i32 or i64 [B, T]; default: the first training
//      batch of the job's data and seed))
//   pcp-local sample out/ckpt.safetensors [--prompt=TEXT] [--max_new_tokens=N]
//                   [--temperature=T] [--top_k=K] [--seed=S]
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
#include "pcp/base/file.h"
#include "pcp/base/status_macros.h"
#include "pcp/history/round_record_format.h"
#include "pcp/kernels/backend_factory.h"
#include "pcp/tensor/convert.h"
#include "pcp/training/checkpoint.h"
#include "pcp/training/inner_loop.h"
#include "pcp/training/job_config.h"
#include "pcp/training/job_model.h"
#include "pcp/training/local_training.h"
#include "pcp/training/model_program.h"
#include "pcp/training/text_sampler.h"
#include "pcp/training/tokenizer.h"

ABSL_FLAG(int64_t, max_iters, -1, "train: override training.max_iters");
ABSL_FLAG(std::string, out_dir, "", "train: override training.out_dir");
ABSL_FLAG(int32_t, threads, -1, "override training.threads (0 = all cores)");
ABSL_FLAG(std::string, backend, "", "override training.backend: cpu, vulkan or auto");
ABSL_FLAG(std::string, prompt, "\n", "sample: the text to continue");
ABSL_FLAG(int64_t, max_new_tokens, 500, "sample: number of tokens to generate");
ABSL_FLAG(double, temperature, 0.8, "sample: softmax temperature (> 0)");
ABSL_FLAG(int64_t, top_k, 200, "sample: keep the k most likely tokens (0 = all)");
ABSL_FLAG(uint64_t, seed, 1337, "sample: random seed");
ABSL_FLAG(std::string, params, "", "eval: parameters (a checkpoint or any safetensors, by name)");
ABSL_FLAG(std::string, batch, "", "eval: a batch: safetensors with 'tokens' and 'targets' [B, T]");

namespace pcp {
namespace {

absl::Status Train(const std::string& job_path) {
  PCP_ASSIGN_OR_RETURN(JobConfig job, LoadJobConfig(job_path));
  if (absl::GetFlag(FLAGS_max_iters) >= 0) job.training.max_iters = absl::GetFlag(FLAGS_max_iters);
  if (!absl::GetFlag(FLAGS_out_dir).empty()) job.training.out_dir = absl::GetFlag(FLAGS_out_dir);
  if (absl::GetFlag(FLAGS_threads) >= 0) job.training.threads = absl::GetFlag(FLAGS_threads);
  std::string backend_name = absl::GetFlag(FLAGS_backend);
  if (backend_name.empty()) backend_name = std::string(BackendChoiceName(job.training.backend));
  PCP_ASSIGN_OR_RETURN(std::unique_ptr<Backend> backend,
                       CreateBackend(backend_name, static_cast<int>(job.training.threads)));
  // The run's record, as the cluster's per-round record (pcpctl history --csv) has it:
  // one line per log line and per evaluation, appended as they happen.
  PCP_RETURN_IF_ERROR(MakeDirs(job.training.out_dir), _ << "creating out_dir");
  const std::string history_path = job.training.out_dir + "/history.csv";
  PCP_RETURN_IF_ERROR(WriteFileAtomic(history_path, history::RecordsCsvHeader()));
  absl::Status history_status;
  auto on_record = [&](const LocalRecord& local) {
    if (!history_status.ok()) return;
    v1::RoundRecord r;
    r.set_round(static_cast<uint64_t>(local.step));
    r.set_start_unix_ms(local.start_unix_ms);
    r.set_end_unix_ms(local.end_unix_ms);
    r.set_tokens(static_cast<uint64_t>(local.tokens));
    r.set_tokens_total(static_cast<uint64_t>(local.tokens_total));
    if (local.train_loss) r.set_train_loss(*local.train_loss);
    if (local.val_loss) r.set_val_loss(*local.val_loss);
    r.set_round_s(local.seconds);
    r.set_inner_lr(local.lr);
    history_status = AppendFile(history_path, history::RecordCsvRow(r), /*sync=*/false);
  };
  PCP_ASSIGN_OR_RETURN(LocalTrainingResult result, RunLocalTraining(job, *backend, stdout, on_record));
  PCP_RETURN_IF_ERROR(history_status, _ << "writing the run's record");
  std::printf("record of the run: %s\n", history_path.c_str());
  if (result.has_logits) {
    std::printf("sample with: pcp-local sample %s\n", result.checkpoint_path.c_str());
  } else {
    std::printf("no sample: %s\n", kNoLogitsReason);
  }
  return absl::OkStatus();
}

// The batch of `path` as i32 [B, T] (i64 converted), checked against the program's shape.
absl::StatusOr<Batch> ReadBatch(const std::string& path, int64_t batch_size, int64_t block_size) {
  PCP_ASSIGN_OR_RETURN(SafetensorsContents contents, ReadSafetensorsFile(path));
  Batch batch;
  for (const char* name : {"tokens", "targets"}) {
    const Tensor* t = contents.Find(name);
    if (t == nullptr) return absl::InvalidArgumentError(absl::StrCat(path, ": no tensor '", name, "'"));
    if ((t->dtype() != DType::kI32 && t->dtype() != DType::kI64) || t->shape() != Shape{batch_size, block_size}) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": '", name, "' is ", t->TypeString(),
                                                     "; the job takes i32 or i64 [", batch_size, ", ", block_size,
                                                     "]"));
    }
    PCP_ASSIGN_OR_RETURN(Tensor i32, ConvertTensor(*t, DType::kI32), _ << path << ": " << name);
    (std::string(name) == "tokens" ? batch.x : batch.y) = std::move(i32);
  }
  return batch;
}

absl::Status Eval(const std::string& job_path) {
  PCP_ASSIGN_OR_RETURN(JobConfig job, LoadJobConfig(job_path));
  PCP_ASSIGN_OR_RETURN(Dataset data, LoadJobDataset(&job, DataRoots::Unconfined()));
  PCP_ASSIGN_OR_RETURN(ModelProgram program, BuildJobProgram(job, DataRoots::Unconfined()));
  for (const std::string& w : program.warnings) std::fprintf(stderr, "warning: %s\n", w.c_str());
  std::vector<Tensor> params = program.initial_params;
  if (const std::string path = absl::GetFlag(FLAGS_params); !path.empty()) {
    PCP_ASSIGN_OR_RETURN(SafetensorsContents contents, ReadSafetensorsFile(path));
    ModelCheckpoint ckpt;
    ckpt.metadata = contents.metadata;
    if (const std::string source = ckpt.Meta("pcp.model"); !source.empty()) {
      PCP_RETURN_IF_ERROR(CheckModelSource(job.model, source), _ << path);
    }
    for (NamedTensor& t : contents.tensors) {
      const bool tied_copy =
          t.name == kTiedHeadName &&
          std::find(program.param_names.begin(), program.param_names.end(), t.name) == program.param_names.end();
      if (!tied_copy) ckpt.params.push_back(std::move(t));
    }
    PCP_ASSIGN_OR_RETURN(params, ParamsInOrder(ckpt, program.param_names), _ << path);
    for (size_t i = 0; i < params.size(); ++i) {
      if (params[i].dtype() != program.param_types[i].dtype || params[i].shape() != program.param_types[i].shape) {
        return absl::InvalidArgumentError(absl::StrCat(path, ": '", program.param_names[i], "' is ",
                                                       params[i].TypeString(), ", the model takes ",
                                                       program.param_types[i].ToString()));
      }
    }
  }
  Batch batch;
  if (const std::string path = absl::GetFlag(FLAGS_batch); !path.empty()) {
    PCP_ASSIGN_OR_RETURN(batch, ReadBatch(path, program.batch_size, program.block_size));
  } else {
    // The first batch `pcp-local train` steps on.
    BatchSampler sampler(static_cast<uint64_t>(job.training.seed));
    PCP_ASSIGN_OR_RETURN(batch, sampler.Next(data.train(), program.batch_size, program.block_size));
  }
  int threads =
      absl::GetFlag(FLAGS_threads) < 0 ? static_cast<int>(job.training.threads) : absl::GetFlag(FLAGS_threads);
  std::string backend_name = absl::GetFlag(FLAGS_backend);
  if (backend_name.empty()) backend_name = std::string(BackendChoiceName(job.training.backend));
  PCP_ASSIGN_OR_RETURN(std::unique_ptr<Backend> backend, CreateBackend(backend_name, threads));
  PCP_ASSIGN_OR_RETURN(auto loop, InnerLoop::Create(*backend, program.train_step));
  PCP_ASSIGN_OR_RETURN(auto eval, Evaluator::Create(*loop, program.eval_loss));
  PCP_RETURN_IF_ERROR(loop->SetParams(params));
  PCP_ASSIGN_OR_RETURN(float loss, eval->Loss(batch));
  std::printf("%.6f\n", loss);
  return absl::OkStatus();
}

absl::Status Sample(const std::string& checkpoint_path) {
  PCP_ASSIGN_OR_RETURN(ModelCheckpoint ckpt, ReadModelCheckpoint(checkpoint_path));
  std::string tokenizer_text = ckpt.Meta("pcp.tokenizer");
  Tokenizer tokenizer = Tokenizer::Byte();
  if (!tokenizer_text.empty()) {
    PCP_ASSIGN_OR_RETURN(tokenizer, Tokenizer::Deserialize(tokenizer_text), _ << checkpoint_path);
  }
  PCP_ASSIGN_OR_RETURN(std::vector<int32_t> prompt, tokenizer.Encode(absl::GetFlag(FLAGS_prompt)), _ << "prompt");
  SampleOptions options{.max_new_tokens = absl::GetFlag(FLAGS_max_new_tokens),
                        .temperature = absl::GetFlag(FLAGS_temperature),
                        .top_k = absl::GetFlag(FLAGS_top_k),
                        .seed = absl::GetFlag(FLAGS_seed),
                        .vocab = tokenizer.vocab_size()};
  Function logits;
  if (IsImportedModelSource(ckpt.Meta("pcp.model"))) {
    // An imported model samples through its job's model.logits (the module is imported again).
    PCP_ASSIGN_OR_RETURN(ImportedSampling imported, ImportedSamplingOf(ckpt.Meta("pcp.job"), ckpt.Meta("pcp.model")),
                         _ << checkpoint_path);
    if (!imported.logits.has_value()) {
      return absl::FailedPreconditionError(absl::StrCat(checkpoint_path, ": ", kNoLogitsReason));
    }
    logits = *std::move(imported.logits);
  } else {
    PCP_ASSIGN_OR_RETURN(GPTConfig model, GptConfigFromJson(ckpt.Meta("pcp.model")), _ << checkpoint_path);
    PCP_ASSIGN_OR_RETURN(logits,
                         BuildSampleLogits(model, static_cast<int64_t>(prompt.size()) + options.max_new_tokens));
  }
  std::vector<std::string> names = logits.param_names;
  names.pop_back();  // tokens
  PCP_ASSIGN_OR_RETURN(std::vector<Tensor> params, ParamsInOrder(ckpt, names), _ << checkpoint_path);
  int threads = absl::GetFlag(FLAGS_threads) < 0 ? 0 : absl::GetFlag(FLAGS_threads);
  std::string backend_name = absl::GetFlag(FLAGS_backend).empty() ? "cpu" : absl::GetFlag(FLAGS_backend);
  PCP_ASSIGN_OR_RETURN(std::unique_ptr<Backend> backend, CreateBackend(backend_name, threads));
  PCP_ASSIGN_OR_RETURN(auto sampler, TextSampler::Create(*backend, logits, params));
  PCP_ASSIGN_OR_RETURN(std::vector<int32_t> ids, sampler->Generate(prompt, options));
  PCP_ASSIGN_OR_RETURN(std::string text, tokenizer.Decode(ids));
  std::printf("%s\n", text.c_str());
  return absl::OkStatus();
}

}  // namespace
}  // namespace pcp

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "train a job locally, evaluate its loss, or sample from a checkpoint\n"
      "  pcp-local train JOB.yaml [--max_iters=N] [--out_dir=DIR] [--threads=N] [--backend=cpu|vulkan|auto]\n"
      "  pcp-local eval JOB.yaml [--params=P.safetensors] [--batch=B.safetensors] [--threads=N] [--backend=...]\n"
      "    prints the loss (%.6f) of the parameters (default: the job's initial values) on the batch\n"
      "    ('tokens' and 'targets', i32 or i64 [B, T]; default: the first training batch of the job's seed)\n"
      "  pcp-local sample CHECKPOINT.safetensors [--prompt=TEXT] [--max_new_tokens=N] [--temperature=T] "
      "[--top_k=K] [--seed=S]");
  std::vector<char*> args = absl::ParseCommandLine(argc, argv);
  const std::string command = args.size() == 3 ? args[1] : "";
  if (command != "train" && command != "sample" && command != "eval") {
    std::fprintf(stderr, "%s\n", absl::ProgramUsageMessage().data());
    return 2;
  }
  absl::Status status = command == "train"  ? pcp::Train(args[2])
                        : command == "eval" ? pcp::Eval(args[2])
                                            : pcp::Sample(args[2]);
  if (!status.ok()) {
    std::fprintf(stderr, "pcp-local %s: %s\n", args[1], std::string(status.message()).c_str());
    return 1;
  }
  return 0;
}

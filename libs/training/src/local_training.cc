#include "pcp/training/local_training.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "pcp/base/file.h"
#include "pcp/base/status_macros.h"
#include "pcp/training/checkpoint.h"
#include "pcp/training/inner_loop.h"
#include "pcp/training/job_model.h"
#include "pcp/training/model_program.h"
#include "pcp/training/progress.h"

namespace pcp {
namespace {

using Clock = std::chrono::steady_clock;

double MsSince(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

int64_t UnixMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

absl::StatusOr<LocalTrainingResult> RunLocalTraining(JobConfig job, Backend& backend, std::FILE* out,
                                                     const std::function<void(const LocalRecord&)>& on_record) {
  // pcp-local trains on the user's own files: no data roots (data_roots.h).
  PCP_ASSIGN_OR_RETURN(Dataset data, LoadJobDataset(&job, DataRoots::Unconfined()));
  const TrainingConfig& t = job.training;
  if (job.model.imported()) {
    std::fprintf(out, "job %s: %s, batch %lld x block %lld; %lld train / %lld val tokens\n", job.name.c_str(),
                 ModelSummary(job.model).c_str(), (long long)t.batch_size, (long long)job.model.block_size,
                 (long long)data.train().size(), (long long)data.val().size());
  } else {
    const GPTConfig model = job.model.ToGPTConfig();
    std::fprintf(
        out, "job %s: GPT %lld layers x %lld heads x %lld wide, block %lld, vocab %lld; %lld train / %lld val tokens\n",
        job.name.c_str(), (long long)model.n_layer, (long long)model.n_head, (long long)model.n_embd,
        (long long)model.block_size, (long long)model.vocab_size, (long long)data.train().size(),
        (long long)data.val().size());
  }
  LocalTrainingResult result;
  auto t0 = Clock::now();
  PCP_ASSIGN_OR_RETURN(ModelProgram program, BuildJobProgram(job, DataRoots::Unconfined()));
  for (const std::string& w : program.warnings) std::fprintf(out, "warning: %s\n", w.c_str());
  PCP_ASSIGN_OR_RETURN(auto loop, InnerLoop::Create(backend, program.train_step));
  PCP_ASSIGN_OR_RETURN(auto eval, Evaluator::Create(*loop, program.eval_loss));
  PCP_RETURN_IF_ERROR(loop->SetParams(program.initial_params));
  std::fprintf(out, "%.2fM parameters; train_step has %zu instructions; built and compiled for %s (%s) in %.0f ms\n",
               static_cast<double>(program.num_params) / 1e6, program.train_step.instructions.size(),
               backend.Name().c_str(), backend.DeviceDescription().c_str(), MsSince(t0));
  result.has_logits = program.logits.has_value();

  const LrSchedule schedule = job.optimizer.Schedule();
  BatchSampler sampler(static_cast<uint64_t>(t.seed));
  const uint64_t eval_seed = static_cast<uint64_t>(t.seed) + 1000003;
  const double tokens_per_step = static_cast<double>(t.batch_size * job.model.block_size);
  ProgressMeter meter(t.max_iters);
  double timed_ms = 0;
  int64_t timed_steps = 0;

  auto evaluate = [&](int64_t iter) -> absl::Status {
    auto e0 = Clock::now();
    PCP_ASSIGN_OR_RETURN(result.final_train_loss, eval->MeanLoss(data.train(), t.eval_iters, eval_seed));
    PCP_ASSIGN_OR_RETURN(result.final_val_loss, eval->MeanLoss(data.val(), t.eval_iters, eval_seed + 1));
    std::fprintf(out, "step %lld: train loss %.4f, val loss %.4f (eval %.1f s)\n", (long long)iter,
                 result.final_train_loss, result.final_val_loss, MsSince(e0) / 1000);
    std::fflush(out);
    if (on_record) {
      LocalRecord r{.step = iter, .start_unix_ms = UnixMs(), .end_unix_ms = UnixMs()};
      r.tokens_total = static_cast<int64_t>(static_cast<double>(iter) * tokens_per_step);
      r.val_loss = result.final_val_loss;
      r.lr = schedule.At(std::max<int64_t>(iter - 1, 0));
      on_record(r);
    }
    return absl::OkStatus();
  };

  double interval_ms = 0, interval_loss = 0;
  int64_t interval_steps = 0;
  int64_t interval_start_ms = UnixMs();
  for (int64_t iter = 0; iter < t.max_iters; ++iter) {
    if (t.eval_interval > 0 && iter % t.eval_interval == 0) PCP_RETURN_IF_ERROR(evaluate(iter));
    PCP_ASSIGN_OR_RETURN(Batch batch, sampler.Next(data.train(), t.batch_size, job.model.block_size));
    const double lr = schedule.At(iter);
    auto s0 = Clock::now();
    PCP_ASSIGN_OR_RETURN(float loss, loop->Step(batch, static_cast<float>(lr)));
    const double ms = MsSince(s0);
    if (iter > 0) {
      timed_ms += ms;
      ++timed_steps;
    }
    interval_ms += ms;
    interval_loss += loss;
    ++interval_steps;
    meter.Advance(ms);
    if (!std::isfinite(loss)) {
      return absl::InternalError(absl::StrCat("loss became ", loss, " at step ", iter, " (lr ", lr, ")"));
    }
    if (t.log_interval > 0 && (iter % t.log_interval == 0 || iter + 1 == t.max_iters)) {
      const int64_t n = iter % t.log_interval == 0 ? std::min<int64_t>(t.log_interval, iter + 1) : 1;
      const double avg_ms = interval_ms / static_cast<double>(n);
      std::fprintf(out, "iter %lld/%lld | loss %.4f | lr %.2e | %.1f ms/step | %.0f tok/s | ETA %s\n", (long long)iter,
                   (long long)t.max_iters, loss, lr, avg_ms, tokens_per_step * 1000.0 / avg_ms, meter.Eta().c_str());
      std::fflush(out);
      if (on_record) {
        LocalRecord r{.step = iter + 1, .start_unix_ms = interval_start_ms, .end_unix_ms = UnixMs()};
        r.tokens = static_cast<int64_t>(static_cast<double>(interval_steps) * tokens_per_step);
        r.tokens_total = static_cast<int64_t>(static_cast<double>(iter + 1) * tokens_per_step);
        r.train_loss = interval_loss / static_cast<double>(interval_steps);
        r.seconds = interval_ms / 1000.0;
        r.lr = lr;
        on_record(r);
      }
      interval_ms = 0;
      interval_loss = 0;
      interval_steps = 0;
      interval_start_ms = UnixMs();
    }
  }
  result.iters = t.max_iters;
  PCP_RETURN_IF_ERROR(evaluate(t.max_iters));
  result.mean_step_ms = timed_steps > 0 ? timed_ms / static_cast<double>(timed_steps) : 0;

  PCP_RETURN_IF_ERROR(MakeDirs(t.out_dir), _ << "creating out_dir");
  result.checkpoint_path = t.out_dir + "/ckpt.safetensors";
  PCP_ASSIGN_OR_RETURN(std::vector<Tensor> params, loop->GetParams());
  SafetensorsMetadata meta = {
      {"pcp.model", ModelSourceJson(job.model)},
      {"pcp.job", ToYaml(job)},
      {"pcp.iter", absl::StrCat(t.max_iters)},
      {"pcp.train_loss", absl::StrFormat("%.6f", result.final_train_loss)},
      {"pcp.val_loss", absl::StrFormat("%.6f", result.final_val_loss)},
  };
  if (data.tokenizer().has_value()) meta.push_back({"pcp.tokenizer", data.tokenizer()->Serialize()});
  PCP_RETURN_IF_ERROR(WriteModelCheckpoint(result.checkpoint_path, loop->param_names(), params, meta));
  PCP_ASSIGN_OR_RETURN(std::vector<Tensor> moments, loop->GetOptimizerState());
  PCP_RETURN_IF_ERROR(
      WriteOptimizerState(t.out_dir + "/optimizer.safetensors", loop->param_names(), moments, loop->step()));
  std::fprintf(out, "done: %lld iterations, %.1f ms/step on average; val loss %.4f; checkpoint %s\n",
               (long long)t.max_iters, result.mean_step_ms, result.final_val_loss, result.checkpoint_path.c_str());
  return result;
}

}  // namespace pcp

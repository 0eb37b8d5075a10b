// JobRun's checkpoints: what goes into one, and its write on the checkpoint writer's thread
// (checkpoint_writer.h).
#include <algorithm>
#include <chrono>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "job_run.h"
#include "pcp/base/absl_fmt.h"
#include "pcp/metrics/registry.h"
#include "pcp/training/checkpoint.h"
#include "shepherd_metrics.h"
#include "spdlog/spdlog.h"

namespace pcp::shepherd {

absl::Status JobRun::WriteCheckpoint(bool wait) {
  const JobConfig& c = prepared_->config;
  SafetensorsMetadata meta = {
      {"pcp.model", ModelSourceJson(c.model)},
      {"pcp.job", ToYaml(c)},
      {"pcp.job_id", job_.id},
      {"pcp.iter", absl::StrCat(c.diloco.FirstStep(state_.round + 1))},
  };
  if (state_.train_loss) meta.push_back({"pcp.train_loss", absl::StrFormat("%.6f", *state_.train_loss)});
  if (state_.val_loss) meta.push_back({"pcp.val_loss", absl::StrFormat("%.6f", *state_.val_loss)});
  if (prepared_->data.tokenizer().has_value()) meta.push_back({"pcp.tokenizer", prepared_->data.tokenizer()->Serialize()});
  state_.screen_medians.assign(screen_->history().begin(), screen_->history().end());
  // θ's tensors are replaced, never modified; the momentum's are modified by the next outer
  // step, which waits for this write first (CollectCheckpoint).
  DilocoCheckpoint ckpt{.state = state_, .params = theta_, .momentum = outer_step_->Momentum()};
  std::optional<CheckpointWriter::Written> before = checkpoint_writer_.Start(
      state_.round, [dir = job_.dir, names = prepared_->param_names, ckpt = std::move(ckpt), meta = std::move(meta)]() mutable {
        return WriteDilocoCheckpoint(dir, names, ckpt, std::move(meta));
      });
  if (before.has_value()) LogCheckpointFailure(CheckpointWritten(*before));
  if (!wait) return absl::OkStatus();
  return CheckpointWritten(*checkpoint_writer_.Wait());
}

absl::Status JobRun::CheckpointWritten(const CheckpointWriter::Written& w) {
  if (!w.path.ok()) return absl::Status(w.path.status().code(), absl::StrCat("checkpoint of round ", w.round, ": ", w.path.status().message()));
  metrics::Get(metrics::kShepherdCheckpointDurationSeconds).Observe(w.seconds);
  metrics::Get(metrics::kShepherdCheckpointLastSuccessTimestampSeconds)
      .Set(std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count());
  checkpoint_round_ = std::max(checkpoint_round_, w.round);
  ctx_.jobs->ReportCheckpoint(job_.id, w.round, *w.path);
  spdlog::info("job {}: checkpoint of round {} written in {:.2f} s: {}", job_.id, w.round, w.seconds, *w.path);
  return absl::OkStatus();
}

void JobRun::LogCheckpointFailure(const absl::Status& s) {
  if (!s.ok()) spdlog::error("job {}: {} (training goes on)", job_.id, s.message());
}

void JobRun::CollectCheckpoint() {
  if (std::optional<CheckpointWriter::Written> w = checkpoint_writer_.Wait()) LogCheckpointFailure(CheckpointWritten(*w));
}

absl::Status JobRun::CheckpointIfBehind() {
  CollectCheckpoint();
  if (state_.round == checkpoint_round_ || !failure_.empty()) return absl::OkStatus();
  return WriteCheckpoint(/*wait=*/true);
}

}  // namespace pcp::shepherd

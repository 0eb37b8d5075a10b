// JobRun's checkpoints: what goes into one (its write and report: job_checkpoints.h).
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "job_run.h"
#include "pcp/training/checkpoint.h"

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
  if (prepared_->data.tokenizer().has_value())
    meta.push_back({"pcp.tokenizer", prepared_->data.tokenizer()->Serialize()});
  state_.screen_medians.assign(screen_->history().begin(), screen_->history().end());
  // θ's tensors are replaced, never modified; the momentum's are modified by the next outer
  // step, which waits for this write first (JobCheckpoints::Collect).
  return checkpoints_.Write(prepared_->param_names,
                            DilocoCheckpoint{.state = state_, .params = theta_, .momentum = outer_step_->Momentum()},
                            std::move(meta), wait);
}

absl::Status JobRun::CheckpointIfBehind() {
  checkpoints_.Collect();
  if (state_.round == checkpoints_.on_disk() || !failure_.empty()) return absl::OkStatus();
  return WriteCheckpoint(/*wait=*/true);
}

}  // namespace pcp::shepherd

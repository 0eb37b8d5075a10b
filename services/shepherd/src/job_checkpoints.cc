#include "job_checkpoints.h"

#include <chrono>
#include <optional>

#include "absl/strings/str_cat.h"
#include "pcp/base/absl_fmt.h"
#include "pcp/metrics/registry.h"
#include "shepherd_metrics.h"
#include "spdlog/spdlog.h"

namespace pcp::shepherd {

absl::Status JobCheckpoints::Write(std::vector<std::string> names, DilocoCheckpoint ckpt, SafetensorsMetadata meta,
                                   bool wait) {
  const uint64_t round = ckpt.state.round;
  std::optional<CheckpointWriter::Written> before =
      writer_.Start(round, [dir = job_dir_, names = std::move(names), ckpt = std::move(ckpt),
                            meta = std::move(meta)]() mutable {
        return WriteDilocoCheckpoint(dir, names, ckpt, std::move(meta));
      });
  if (before.has_value()) LogFailure(Report(*before));
  if (!wait) return absl::OkStatus();
  return Report(*writer_.Wait());
}

void JobCheckpoints::Collect() {
  if (std::optional<CheckpointWriter::Written> w = writer_.Wait()) LogFailure(Report(*w));
}

absl::Status JobCheckpoints::Report(const CheckpointWriter::Written& w) {
  if (!w.path.ok()) {
    return absl::Status(w.path.status().code(),
                        absl::StrCat("checkpoint of round ", w.round, ": ", w.path.status().message()));
  }
  metrics::Get(metrics::kShepherdCheckpointDurationSeconds).Observe(w.seconds);
  metrics::Get(metrics::kShepherdCheckpointLastSuccessTimestampSeconds)
      .Set(std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count());
  NoteOnDisk(w.round);
  jobs_->ReportCheckpoint(job_id_, w.round, *w.path);
  spdlog::info("job {}: checkpoint of round {} written in {:.2f} s: {}", job_id_, w.round, w.seconds, *w.path);
  return absl::OkStatus();
}

void JobCheckpoints::LogFailure(const absl::Status& s) const {
  if (!s.ok()) spdlog::error("job {}: {} (training goes on)", job_id_, s.message());
}

}  // namespace pcp::shepherd

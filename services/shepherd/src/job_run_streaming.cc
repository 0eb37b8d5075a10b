// JobRun's Streaming DiLoCo parts (job_run.h; pcp/diloco/streaming.h).
#include "absl/strings/str_cat.h"
#include "job_run.h"
#include "pcp/base/absl_fmt.h"
#include "pcp/base/status_macros.h"
#include "pcp/rpc/tensor_fragments.h"
#include "pcp/rpc/tensor_list.h"
#include "spdlog/spdlog.h"

namespace pcp::shepherd {

absl::Status JobRun::PrepareStreaming() {
  const diloco::StreamingOptions& so = prepared_->config.diloco.streaming;
  std::vector<int64_t> sizes;
  for (const Tensor& t : theta_) sizes.push_back(t.num_elements());
  PCP_ASSIGN_OR_RETURN(diloco::FragmentPlan plan, diloco::FragmentPlan::Create(sizes, so.fragments));
  fragments_ = std::move(plan);
  const JobConfig& c = prepared_->config;
  std::string sizes_text;
  for (int64_t p = 0; p < fragments_->fragments(); ++p) {
    absl::StrAppend(&sizes_text, p == 0 ? "" : ", ", fragments_->elements(p));
  }
  spdlog::info(
      "job {}: streaming DiLoCo: {} fragments of {} values, one synced every {} inner steps; merged {} steps "
      "late{}",
      job_.id, fragments_->fragments(), sizes_text, absl::StrCat(c.diloco.inner_steps, "/", so.fragments),
      so.overlap_steps, so.overlap_steps > 0 ? absl::StrCat(" with alpha ", so.alpha) : std::string(" (replaced)"));
  return absl::OkStatus();
}

void JobRun::SendStreamingRound(Member& m) {
  const JobConfig& c = prepared_->config;
  const uint64_t r = round_->number;
  WorkerSession& s = *m.session;
  // A worker sent round r ahead that holds θ for r was told to expect it as round r − 1 closed
  // (SendFragment): its Δ may be arriving already.
  const bool ahead = m.started_round == r && m.theta_round == r;
  if (!ahead) ExpectResultOf(s, r);
  if (m.theta_round != r) {
    // A new, returning or late worker (or one whose replica drifted): θ in full.
    absl::StatusOr<std::shared_ptr<const ChunkedList>> theta = theta_encoder_->Full(theta_);
    if (!theta.ok()) return s.Close(theta.status());
    s.SendParameters(r, *std::move(theta));
    m.theta_round = r;
  }
  uint64_t cursor = m.started_cursor;
  if (m.started_round != r) {
    cursor = state_.slots[m.slot].sampler_cursor;
    SendStart(m, r, cursor, theta_crc_);
  }
  round_->start_cursor[m.slot] = cursor;
  // The next round's StartRound goes ahead: the worker trains on through this round's outer step.
  if (r < total_rounds()) {
    m.started_round = r + 1;
    m.started_cursor = cursor + static_cast<uint64_t>(c.diloco.StepsOfRound(r));
    SendStart(m, r + 1, m.started_cursor, 0);
  } else {
    m.started_round = r;
  }
  m.phase = Phase::kInRound;
  round_->running[m.slot] = m.session.get();
  round_->sent_at[m.slot] = Clock::now();
  round_->sent_to.insert(s.supervisor_id());
  ctx_.registry->NoteActivity(s.supervisor_id(), job_.id, r);
}

void JobRun::TakeEarlyResults() {
  std::vector<EarlyResult> early = std::move(early_results_);
  early_results_.clear();
  for (EarlyResult& e : early) {
    if (std::shared_ptr<WorkerSession> session = e.session.lock()) {
      OnResult(session, e.round, std::move(e.delta), e.result);
    }
  }
}

void JobRun::SendFragment(uint64_t r) {
  const int64_t p = fragments_->FragmentOfRound(r);
  // Chunked (encoded, checksummed) once for every stream.
  absl::StatusOr<FragmentChunks> fragment = theta_encoder_->Fragment(r, theta_);
  if (!fragment.ok()) {
    spdlog::error("job {}: chunking round {}'s fragment: {}", job_.id, r, fragment.status().message());
    return;
  }
  v1::ParameterChunk head;
  head.set_round(r + 1);
  head.set_update_from_round(fragment->update ? r : 0);
  head.set_fragment(static_cast<uint32_t>(p + 1));
  head.set_theta_crc32c(theta_crc_);
  for (auto& [key, m] : members_) {
    if (m.theta_round != r || m.phase == Phase::kQuarantined) continue;
    // It may send round r + 1's Δ as soon as it has merged this.
    if (m.started_round == r + 1) ExpectResultOf(*m.session, r + 1);
    m.session->SendParameters(head, fragment->chunks);
    m.theta_round = r + 1;
  }
}

}  // namespace pcp::shepherd

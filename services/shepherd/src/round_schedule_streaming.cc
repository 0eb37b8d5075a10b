// The synchronous schedule's Streaming DiLoCo parts (round_schedule_sync.h; pcp/diloco/streaming.h).
#include "round_schedule_sync.h"

#include "absl/strings/str_cat.h"
#include "pcp/base/absl_fmt.h"
#include "pcp/base/status_macros.h"
#include "pcp/rpc/tensor_fragments.h"
#include "pcp/rpc/tensor_list.h"
#include "spdlog/spdlog.h"

namespace pcp::shepherd {

void SyncSchedule::SendStreamingRound(Member& m) {
  const JobConfig& c = host_.config();
  const uint64_t r = round_->number;
  WorkerSession& s = *m.session;
  // A worker sent round r ahead that holds θ for r was told to expect it as round r − 1 closed
  // (SendFragment): its Δ may be arriving already.
  const bool ahead = m.started_round == r && m.theta_round == r;
  if (!ahead) host_.ExpectResultOf(s, r);
  if (m.theta_round != r) {
    // A new, returning or late worker (or one whose replica drifted): θ in full.
    absl::StatusOr<std::shared_ptr<const ChunkedList>> theta = host_.theta_encoder().Full(host_.theta());
    if (!theta.ok()) return s.Close(theta.status());
    s.SendParameters(r, *std::move(theta));
    m.theta_round = r;
  }
  uint64_t cursor = m.started_cursor;
  if (m.started_round != r) {
    cursor = host_.state().slots[m.slot].sampler_cursor;
    host_.SendStart(m, r, cursor, host_.theta_crc());
  }
  round_->start_cursor[m.slot] = cursor;
  // The next round's StartRound goes ahead: the worker trains on through this round's outer step.
  if (r < TotalRounds()) {
    m.started_round = r + 1;
    m.started_cursor = cursor + static_cast<uint64_t>(c.diloco.StepsOfRound(r));
    host_.SendStart(m, r + 1, m.started_cursor, 0);
  } else {
    m.started_round = r;
  }
  m.phase = MemberPhase::kInRound;
  round_->running[m.slot] = m.session.get();
  round_->sent_at[m.slot] = Clock::now();
  round_->sent_to.insert(s.supervisor_id());
  host_.registry().NoteActivity(s.supervisor_id(), host_.job_id(), r);
}

void SyncSchedule::TakeEarlyResults() {
  std::vector<EarlyResult> early = std::move(early_results_);
  early_results_.clear();
  for (EarlyResult& e : early) {
    std::shared_ptr<WorkerSession> session = e.session.lock();
    if (session == nullptr) continue;
    if (auto m = host_.members().find(session.get()); m != host_.members().end()) {
      OnResult(m->second, e.round, std::move(e.delta), e.result);
    }
  }
}

void SyncSchedule::SendFragment(uint64_t r) {
  const int64_t p = fragments_->FragmentOfRound(r);
  // Chunked (encoded, checksummed) once for every stream.
  absl::StatusOr<FragmentChunks> fragment = host_.theta_encoder().Fragment(r, host_.theta());
  if (!fragment.ok()) {
    spdlog::error("job {}: chunking round {}'s fragment: {}", host_.job_id(), r, fragment.status().message());
    return;
  }
  v1::ParameterChunk head;
  head.set_round(r + 1);
  head.set_update_from_round(fragment->update ? r : 0);
  head.set_fragment(static_cast<uint32_t>(p + 1));
  head.set_theta_crc32c(host_.theta_crc());
  for (auto& [key, m] : host_.members()) {
    if (m.theta_round != r || m.phase == MemberPhase::kQuarantined) continue;
    // It may send round r + 1's Δ as soon as it has merged this.
    if (m.started_round == r + 1) host_.ExpectResultOf(*m.session, r + 1);
    m.session->SendParameters(head, fragment->chunks);
    m.theta_round = r + 1;
  }
}

}  // namespace pcp::shepherd

#include "pcp/shepherd/job_manager.h"

#include <algorithm>
#include <chrono>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "pcp/base/absl_fmt.h"
#include "pcp/base/status_macros.h"
#include "pcp/base/unix_time.h"
#include "pcp/metrics/registry.h"
#include "pcp/training/job_model.h"
#include "spdlog/spdlog.h"

namespace pcp::shepherd {
namespace {

// pcp_shepherd_jobs{state}: recounted after every change (jobs are few).
template <typename JobMap>
void SetJobGauges(const JobMap& jobs) {
  double queued = 0, running = 0, completed = 0, failed = 0, cancelled = 0;
  for (const auto& [id, e] : jobs) {
    switch (e.stored.job.state()) {
      case v1::JOB_STATE_QUEUED: ++queued; break;
      case v1::JOB_STATE_RUNNING: ++running; break;
      case v1::JOB_STATE_COMPLETED: ++completed; break;
      case v1::JOB_STATE_FAILED: ++failed; break;
      case v1::JOB_STATE_CANCELLED: ++cancelled; break;
      default: break;
    }
  }
  metrics::Get(metrics::kShepherdJobs, {"queued"}).Set(queued);
  metrics::Get(metrics::kShepherdJobs, {"running"}).Set(running);
  metrics::Get(metrics::kShepherdJobs, {"completed"}).Set(completed);
  metrics::Get(metrics::kShepherdJobs, {"failed"}).Set(failed);
  metrics::Get(metrics::kShepherdJobs, {"cancelled"}).Set(cancelled);
}

bool IsTerminal(v1::JobState s) {
  return s == v1::JOB_STATE_COMPLETED || s == v1::JOB_STATE_FAILED || s == v1::JOB_STATE_CANCELLED;
}

// At most `max` bytes of `text`, cut at a UTF-8 character boundary (state.pb must parse).
std::string CutUtf8(absl::string_view text, size_t max) {
  if (text.size() <= max) return std::string(text);
  size_t n = max;
  while (n > 0 && (static_cast<unsigned char>(text[n]) & 0xC0) == 0x80) --n;
  return std::string(text.substr(0, n));
}

std::string StateName(v1::JobState s) {
  std::string name = v1::JobState_Name(s);
  return name.rfind("JOB_STATE_", 0) == 0 ? absl::AsciiStrToLower(name.substr(10)) : name;
}

}  // namespace

v1::JobResult ResultOf(const v1::Job& job) {
  v1::JobResult r;
  r.set_state(job.state());
  r.set_reason(job.reason());
  r.set_rounds_completed(job.progress().round());
  if (job.progress().has_train_loss()) r.set_final_train_loss(job.progress().train_loss());
  if (job.progress().has_val_loss()) r.set_final_val_loss(job.progress().val_loss());
  r.set_checkpoint_path(job.checkpoint_path());
  if (job.started_unix_ms() > 0 && job.finished_unix_ms() >= job.started_unix_ms()) {
    r.set_duration_s(static_cast<double>(job.finished_unix_ms() - job.started_unix_ms()) / 1000.0);
  }
  r.set_tokens_processed(job.progress().tokens_processed());
  return r;
}

absl::StatusOr<std::unique_ptr<JobManager>> JobManager::Open(const std::string& state_dir, AdmissionPolicy policy) {
  std::unique_ptr<JobManager> m(new JobManager(JobStore(state_dir), std::move(policy)));
  int64_t max_seq = 0;
  PCP_ASSIGN_OR_RETURN(std::vector<StoredJob> stored, m->store_.LoadAll(&max_seq),
                       _ << "loading jobs from " << state_dir);
  m->next_seq_ = max_seq + 1;
  for (StoredJob& s : stored) {
    Entry e;
    e.stored = std::move(s);
    // effective_yaml is computed when asked for: a restart does not parse every job file.
    m->next_seq_ = std::max(m->next_seq_, e.stored.seq + 1);
    m->OpenHistoryLocked(e);
    const std::string id = e.stored.job.job_id();
    m->jobs_.emplace(id, std::move(e));
  }
  // A lower max_finished_job_yamls, or a folder from a shepherd that kept every file.
  m->CompactLocked();
  SetJobGauges(m->jobs_);
  JobCounts c = m->Counts();
  spdlog::info("{} jobs in {} ({} queued{})", m->jobs_.size(), state_dir, c.queued,
               c.running_id.empty() ? "" : absl::StrCat(", ", c.running_id, " was running and resumes"));
  return m;
}

void JobManager::SetListener(Listener listener) {
  std::lock_guard<std::mutex> lock(mu_);
  listener_ = std::move(listener);
}

JobManager::Entry* JobManager::FindLocked(absl::string_view job_id) {
  auto it = jobs_.find(std::string(job_id));
  return it == jobs_.end() ? nullptr : &it->second;
}
const JobManager::Entry* JobManager::FindLocked(absl::string_view job_id) const {
  auto it = jobs_.find(std::string(job_id));
  return it == jobs_.end() ? nullptr : &it->second;
}

void JobManager::PersistLocked(const Entry& entry) {
  absl::Status s = store_.SaveState(entry.stored);
  // The in-memory state stays authoritative; a failed write is retried with the next change.
  if (!s.ok()) spdlog::error("saving state of {}: {}", entry.stored.job.job_id(), s.message());
}

void JobManager::EventLocked(const std::string& job_id, v1::JobEvent event, Emit* out) {
  event.set_job_id(job_id);
  event.set_time_unix_ms(NowUnixMs());
  for (auto& [id, w] : watchers_) {
    if (w.job_id == job_id) out->emplace_back(w.fn, event);
  }
}

void JobManager::Deliver(Emit* emit) {
  for (auto& [fn, event] : *emit) fn(event);
  emit->clear();
}

void JobManager::TransitionLocked(Entry& entry, v1::JobState to, absl::string_view reason, Emit* out) {
  v1::Job& job = entry.stored.job;
  const v1::JobState from = job.state();
  job.set_state(to);
  job.set_reason(std::string(reason));
  if (to == v1::JOB_STATE_RUNNING && job.started_unix_ms() == 0) job.set_started_unix_ms(NowUnixMs());
  if (IsTerminal(to)) job.set_finished_unix_ms(NowUnixMs());
  PersistLocked(entry);
  spdlog::info("job {} ({}): {} -> {}{}", job.job_id(), job.name(), StateName(from), StateName(to),
               reason.empty() ? "" : absl::StrCat(": ", reason));
  v1::JobEvent change;
  change.mutable_state_change()->set_from(from);
  change.mutable_state_change()->set_to(to);
  change.mutable_state_change()->set_reason(std::string(reason));
  EventLocked(job.job_id(), std::move(change), out);
  SetJobGauges(jobs_);
  if (IsTerminal(to)) {
    entry.validated.reset();  // a job cancelled while queued
    CompactLocked();
    v1::JobEvent result;
    *result.mutable_result() = ResultOf(job);
    EventLocked(job.job_id(), std::move(result), out);
    for (auto it = watchers_.begin(); it != watchers_.end();) {
      it = it->second.job_id == job.job_id() ? watchers_.erase(it) : std::next(it);
    }
  }
}

void JobManager::CompactLocked() {
  std::vector<Entry*> kept;
  for (auto& [id, e] : jobs_) {
    if (IsTerminal(e.stored.job.state()) && !e.stored.yaml_dropped) kept.push_back(&e);
  }
  if (static_cast<int64_t>(kept.size()) <= policy_.max_finished_job_yamls) return;
  // Newest finished first (ties: the later submission), so the jobs Sample and people look
  // at last keep their file.
  std::sort(kept.begin(), kept.end(), [](const Entry* a, const Entry* b) {
    const int64_t fa = a->stored.job.finished_unix_ms(), fb = b->stored.job.finished_unix_ms();
    return fa != fb ? fa > fb : a->stored.seq > b->stored.seq;
  });
  for (size_t i = static_cast<size_t>(policy_.max_finished_job_yamls); i < kept.size(); ++i) {
    Entry& e = *kept[i];
    if (absl::Status s = store_.DropYaml(e.stored.job.job_id()); !s.ok()) {
      // Kept in memory too, so that memory and disk agree; tried again at the next finish.
      spdlog::error("dropping the job file of finished job {}: {}", e.stored.job.job_id(), s.message());
      continue;
    }
    std::string().swap(e.stored.yaml);
    e.stored.yaml_dropped = true;
    e.effective_yaml.reset();
  }
}

const std::string& JobManager::EffectiveYamlLocked(const Entry& entry) const {
  if (!entry.effective_yaml.has_value()) {
    entry.effective_yaml.emplace();
    if (!entry.stored.yaml_dropped) {
      absl::StatusOr<JobConfig> config =
          ParseJobConfig(entry.stored.yaml, entry.stored.file_name, entry.stored.base_dir, policy_.data_roots);
      if (config.ok()) *entry.effective_yaml = ToYaml(*config);
    }
  }
  return *entry.effective_yaml;
}

absl::Status JobManager::MakeRoomLocked() {
  int64_t active = 0;
  for (const auto& [id, e] : jobs_) active += IsTerminal(e.stored.job.state()) ? 0 : 1;
  if (active >= policy_.max_queued_jobs) {
    metrics::Get(metrics::kShepherdAdmissionRefusalsTotal, {"jobs_queued"}).Increment();
    return absl::ResourceExhaustedError(
        absl::StrCat(active, " jobs are queued or running, the most this shepherd takes (max_queued_jobs ",
                     policy_.max_queued_jobs, "); retry when some have finished"));
  }
  // jobs_ iterates in submission order: the oldest finished jobs go first.
  for (auto it = jobs_.begin(); it != jobs_.end() && static_cast<int64_t>(jobs_.size()) >= policy_.max_jobs;) {
    if (!IsTerminal(it->second.stored.job.state())) {
      ++it;
      continue;
    }
    if (absl::Status s = store_.Remove(it->first); !s.ok()) {
      spdlog::error("pruning job {}: {}", it->first, s.message());
      return absl::ResourceExhaustedError(absl::StrCat("the shepherd keeps at most ", policy_.max_jobs,
                                                       " jobs (max_jobs) and could not prune a finished one"));
    }
    spdlog::info("job {} ({}) pruned: {} jobs kept at most (max_jobs)", it->first, it->second.stored.job.name(),
                 policy_.max_jobs);
    it = jobs_.erase(it);
  }
  if (static_cast<int64_t>(jobs_.size()) >= policy_.max_jobs) {
    metrics::Get(metrics::kShepherdAdmissionRefusalsTotal, {"jobs_stored"}).Increment();
    return absl::ResourceExhaustedError(
        absl::StrCat("the shepherd keeps at most ", policy_.max_jobs, " jobs (max_jobs), none of them finished"));
  }
  SetJobGauges(jobs_);
  return absl::OkStatus();
}

absl::StatusOr<v1::SubmitJobResponse> JobManager::Submit(const v1::SubmitJobRequest& request) {
  // Before anything else: what the job would keep is bounded in bytes.
  if (request.file_name().size() > kMaxJobPathBytes || request.base_dir().size() > kMaxJobPathBytes) {
    return absl::InvalidArgumentError(absl::StrCat("file_name (", request.file_name().size(), " bytes) and base_dir (",
                                                   request.base_dir().size(), " bytes) may be at most ",
                                                   kMaxJobPathBytes, " bytes each"));
  }
  const std::string file_name = request.file_name().empty() ? kDefaultSubmitFileName : request.file_name();
  if (static_cast<int64_t>(request.yaml().size()) > policy_.max_job_yaml_bytes) {
    return absl::InvalidArgumentError(absl::StrCat(file_name, ": the job file is ", request.yaml().size(),
                                                   " bytes, over this shepherd's max_job_yaml_bytes ",
                                                   policy_.max_job_yaml_bytes));
  }
  if (!request.base_dir().empty() && request.base_dir()[0] != '/') {
    return absl::InvalidArgumentError(
        absl::StrCat("base_dir must be an absolute path, got '", request.base_dir(), "'"));
  }
  {
    // Refused before the slow part when the queue is already full.
    std::lock_guard<std::mutex> lock(mu_);
    PCP_RETURN_IF_ERROR(MakeRoomLocked());
  }
  // The slow part (parsing, reading the data) runs without the lock.
  PCP_ASSIGN_OR_RETURN(ValidatedJob validated,
                       ValidateJob(request.yaml(), file_name, request.base_dir(), policy_.data_roots, policy_.budgets));
  auto shared = std::make_shared<const ValidatedJob>(std::move(validated));
  const JobConfig& config = shared->config;
  if (config.name.size() > kMaxJobNameBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(file_name, ": name: ", config.name.size(), " bytes long, at most ", kMaxJobNameBytes));
  }
  Listener listener;
  v1::SubmitJobResponse response;
  {
    std::lock_guard<std::mutex> lock(mu_);
    PCP_RETURN_IF_ERROR(MakeRoomLocked());
    Entry e;
    e.stored.seq = next_seq_;
    e.stored.yaml = request.yaml();
    e.stored.file_name = file_name;
    e.stored.base_dir = request.base_dir();
    e.effective_yaml = ToYaml(config);
    e.validated = shared;
    v1::Job& job = e.stored.job;
    job.set_job_id(JobIdForSeq(e.stored.seq));
    job.set_name(config.name);
    job.set_model(ModelSummary(config.model));
    job.set_state(v1::JOB_STATE_QUEUED);
    job.set_submitted_unix_ms(NowUnixMs());
    job.mutable_progress()->set_total_rounds(static_cast<uint64_t>(config.diloco.rounds));
    job.mutable_progress()->set_inner_steps(static_cast<uint64_t>(config.diloco.max_steps_per_round()));
    PCP_RETURN_IF_ERROR(store_.Create(e.stored), _ << "storing job " << job.job_id());
    OpenHistoryLocked(e);
    ++next_seq_;
    uint32_t ahead = 0;
    for (const auto& [id, other] : jobs_) {
      const v1::JobState s = other.stored.job.state();
      if (s == v1::JOB_STATE_QUEUED || s == v1::JOB_STATE_RUNNING) ++ahead;
    }
    response.set_job_id(job.job_id());
    response.set_name(job.name());
    response.set_queue_position(ahead);
    spdlog::info("job {} ({}) queued from {}: {}; {} rounds x {} inner steps, {} workers", job.job_id(), job.name(),
                 file_name, job.model(), config.diloco.rounds, config.diloco.inner_steps, config.diloco.workers);
    jobs_.emplace(job.job_id(), std::move(e));
    SetJobGauges(jobs_);
    listener = listener_;
  }
  if (listener) listener();
  return response;
}

std::vector<v1::Job> JobManager::List(const v1::ListJobsRequest& request) const {
  std::vector<std::pair<int64_t, v1::Job>> all;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [id, e] : jobs_) {
      const v1::JobState s = e.stored.job.state();
      if (!request.states().empty() &&
          std::find(request.states().begin(), request.states().end(), s) == request.states().end()) {
        continue;
      }
      all.emplace_back(e.stored.seq, e.stored.job);
    }
  }
  std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<v1::Job> out;
  for (auto& [seq, job] : all) {
    if (request.limit() > 0 && out.size() >= request.limit()) break;
    out.push_back(std::move(job));
  }
  return out;
}

absl::StatusOr<v1::Job> JobManager::Get(absl::string_view job_id) const {
  std::lock_guard<std::mutex> lock(mu_);
  const Entry* e = FindLocked(job_id);
  if (e == nullptr) return absl::NotFoundError(absl::StrCat("no job '", job_id, "'"));
  v1::Job job = e->stored.job;
  job.set_effective_yaml(EffectiveYamlLocked(*e));
  return job;
}

absl::StatusOr<v1::Job> JobManager::Cancel(absl::string_view job_id, absl::string_view reason) {
  Emit emit;
  Listener listener;
  v1::Job job;
  {
    std::lock_guard<std::mutex> lock(mu_);
    Entry* e = FindLocked(job_id);
    if (e == nullptr) return absl::NotFoundError(absl::StrCat("no job '", job_id, "'"));
    const v1::JobState s = e->stored.job.state();
    if (IsTerminal(s)) {
      return absl::FailedPreconditionError(absl::StrCat("job ", job_id, " has already finished (", StateName(s), ")"));
    }
    TransitionLocked(*e, v1::JOB_STATE_CANCELLED, reason.empty() ? "cancelled" : CutUtf8(reason, kMaxCancelReasonBytes),
                     &emit);
    job = e->stored.job;
    listener = listener_;
  }
  Deliver(&emit);
  if (listener) listener();
  return job;
}

std::optional<RunnableJob> JobManager::StartNext() {
  Emit emit;
  std::optional<RunnableJob> next;
  {
    std::lock_guard<std::mutex> lock(mu_);
    // Each pass starts a job, finds none, or fails one that used up its starts.
    while (!next.has_value()) {
      Entry* pick = nullptr;
      for (auto& [id, e] : jobs_) {
        const v1::JobState s = e.stored.job.state();
        if (s == v1::JOB_STATE_RUNNING) {
          pick = &e;
          break;
        }
        if (s == v1::JOB_STATE_QUEUED && (pick == nullptr || e.stored.seq < pick->stored.seq)) pick = &e;
      }
      if (pick == nullptr) break;
      v1::Job& job = pick->stored.job;
      // Only a job left running by a stopped shepherd has starts behind it (one that failed to
      // start is failed at once): it took the process down while starting, that often.
      if (static_cast<int64_t>(job.start_attempts()) >= policy_.max_start_attempts) {
        TransitionLocked(*pick, v1::JOB_STATE_FAILED,
                         absl::StrCat("started ", job.start_attempts(),
                                      " times without completing a round (max_job_start_attempts); the shepherd "
                                      "stopped while it started or ran"),
                         &emit);
        continue;
      }
      // Counted (and persisted) before the job starts: a start that kills the process counts too.
      job.set_start_attempts(job.start_attempts() + 1);
      RunnableJob r;
      r.id = job.job_id();
      r.yaml = pick->stored.yaml;
      r.file_name = pick->stored.file_name;
      r.base_dir = pick->stored.base_dir;
      r.dir = store_.JobDir(r.id);
      r.resumed = job.state() == v1::JOB_STATE_RUNNING;
      r.progress = job.progress();
      r.validated = std::move(pick->validated);  // the coordinator holds it from now on
      if (r.resumed) {
        PersistLocked(*pick);
      } else {
        TransitionLocked(*pick, v1::JOB_STATE_RUNNING, "", &emit);  // persists
      }
      next = std::move(r);
    }
  }
  Deliver(&emit);
  return next;
}

bool JobManager::IsRunning(absl::string_view job_id) const {
  std::lock_guard<std::mutex> lock(mu_);
  const Entry* e = FindLocked(job_id);
  return e != nullptr && e->stored.job.state() == v1::JOB_STATE_RUNNING;
}

void JobManager::ReportProgress(absl::string_view job_id, const v1::JobProgress& progress) {
  Emit emit;
  {
    std::lock_guard<std::mutex> lock(mu_);
    Entry* e = FindLocked(job_id);
    if (e == nullptr || e->stored.job.state() != v1::JOB_STATE_RUNNING) return;
    // A completed round: the job runs, its starts so far were not failures.
    if (progress.round() > e->stored.job.progress().round()) e->stored.job.set_start_attempts(0);
    *e->stored.job.mutable_progress() = progress;
    PersistLocked(*e);
    v1::JobEvent event;
    *event.mutable_progress() = progress;
    EventLocked(e->stored.job.job_id(), std::move(event), &emit);
  }
  Deliver(&emit);
}

void JobManager::ReportCheckpoint(absl::string_view job_id, uint64_t round, const std::string& path) {
  Emit emit;
  {
    std::lock_guard<std::mutex> lock(mu_);
    Entry* e = FindLocked(job_id);
    if (e == nullptr) return;
    e->stored.job.set_checkpoint_path(path);
    PersistLocked(*e);
    v1::JobEvent event;
    event.mutable_checkpoint()->set_round(round);
    event.mutable_checkpoint()->set_path(path);
    EventLocked(e->stored.job.job_id(), std::move(event), &emit);
  }
  Deliver(&emit);
}

void JobManager::ReportScreening(absl::string_view job_id, const v1::ScreeningEvent& screening) {
  Emit emit;
  {
    std::lock_guard<std::mutex> lock(mu_);
    Entry* e = FindLocked(job_id);
    if (e == nullptr) return;
    v1::JobEvent event;
    *event.mutable_screening() = screening;
    EventLocked(e->stored.job.job_id(), std::move(event), &emit);
  }
  Deliver(&emit);
}

void JobManager::OpenHistoryLocked(Entry& entry) {
  const std::string& id = entry.stored.job.job_id();
  absl::StatusOr<JobHistory> history = JobHistory::Open(store_.HistoryPath(id));
  if (!history.ok()) {
    spdlog::error("job {}: its history cannot be read (it is not kept): {}", id, history.status().message());
    return;
  }
  entry.history.emplace(*std::move(history));
  entry.stored.job.set_history_records(entry.history->size());
  entry.stored.job.set_history_max_records(entry.history->max_records());
}

void JobManager::PutRecordLocked(Entry& entry, const v1::RoundRecord& record, Emit* out) {
  if (!entry.history.has_value()) return;
  absl::Status s = entry.history->Put(record);
  // The record stays in memory; the file is repaired by the next rewrite (or the job's
  // history after a restart lacks this round).
  if (!s.ok())
    spdlog::error("job {}: saving the record of round {}: {}", entry.stored.job.job_id(), record.round(), s.message());
  entry.stored.job.set_history_records(entry.history->size());
  const v1::RoundRecord* kept = entry.history->Find(record.round());
  if (kept == nullptr) return;
  v1::JobEvent event;
  *event.mutable_round_record() = *kept;
  EventLocked(entry.stored.job.job_id(), std::move(event), out);
}

void JobManager::RecordRound(absl::string_view job_id, const v1::RoundRecord& record) {
  Emit emit;
  {
    std::lock_guard<std::mutex> lock(mu_);
    Entry* e = FindLocked(job_id);
    if (e == nullptr) return;
    PutRecordLocked(*e, record, &emit);
  }
  Deliver(&emit);
}

void JobManager::RecordValLoss(absl::string_view job_id, uint64_t round, double val_loss) {
  Emit emit;
  {
    std::lock_guard<std::mutex> lock(mu_);
    Entry* e = FindLocked(job_id);
    if (e == nullptr || !e->history.has_value()) return;
    const v1::RoundRecord* held = e->history->Find(round);
    if (held == nullptr) return;
    v1::RoundRecord record = *held;
    record.set_val_loss(val_loss);
    PutRecordLocked(*e, record, &emit);
  }
  Deliver(&emit);
}

void JobManager::DropHistoryAfter(absl::string_view job_id, uint64_t round) {
  std::lock_guard<std::mutex> lock(mu_);
  Entry* e = FindLocked(job_id);
  if (e == nullptr || !e->history.has_value()) return;
  const size_t before = e->history->size();
  absl::Status s = e->history->DropAfter(round);
  if (!s.ok()) spdlog::error("job {}: dropping history records after round {}: {}", job_id, round, s.message());
  if (e->history->size() != before) {
    spdlog::info("job {}: history records of the {} rounds after round {} dropped (they run again)", job_id,
                 before - e->history->size(), round);
  }
  e->stored.job.set_history_records(e->history->size());
}

absl::StatusOr<v1::GetJobHistoryResponse> JobManager::History(const v1::GetJobHistoryRequest& request) const {
  constexpr uint32_t kDefaultLimit = 1000, kMaxLimit = 10000;
  if (request.limit() > kMaxLimit) {
    return absl::InvalidArgumentError(absl::StrCat("limit ", request.limit(), " is over ", kMaxLimit));
  }
  std::lock_guard<std::mutex> lock(mu_);
  const Entry* e = FindLocked(request.job_id());
  if (e == nullptr) return absl::NotFoundError(absl::StrCat("no job '", request.job_id(), "'"));
  v1::GetJobHistoryResponse response;
  if (!e->history.has_value()) return response;
  uint64_t next = 0;
  for (v1::RoundRecord& r :
       e->history->Page(request.after_round(), request.limit() == 0 ? kDefaultLimit : request.limit(), &next)) {
    *response.add_records() = std::move(r);
  }
  response.set_next_after_round(next);
  response.set_total_records(e->history->size());
  response.set_max_records(e->history->max_records());
  return response;
}

bool JobManager::Finish(absl::string_view job_id, v1::JobState state, absl::string_view reason) {
  Emit emit;
  {
    std::lock_guard<std::mutex> lock(mu_);
    Entry* e = FindLocked(job_id);
    if (e == nullptr || e->stored.job.state() != v1::JOB_STATE_RUNNING || !IsTerminal(state)) return false;
    TransitionLocked(*e, state, reason, &emit);
  }
  Deliver(&emit);
  return true;
}

absl::StatusOr<JobManager::WatchStart> JobManager::Watch(absl::string_view job_id, WatchFn fn) {
  std::lock_guard<std::mutex> lock(mu_);
  const Entry* e = FindLocked(job_id);
  if (e == nullptr) return absl::NotFoundError(absl::StrCat("no job '", job_id, "'"));
  WatchStart start;
  start.snapshot = e->stored.job;
  start.snapshot.set_effective_yaml(EffectiveYamlLocked(*e));
  if (IsTerminal(e->stored.job.state())) {
    start.result = ResultOf(e->stored.job);
    return start;
  }
  start.watch_id = next_watch_id_++;
  watchers_[start.watch_id] = Watcher{std::string(job_id), std::move(fn)};
  return start;
}

void JobManager::Unwatch(int64_t watch_id) {
  std::lock_guard<std::mutex> lock(mu_);
  watchers_.erase(watch_id);
}

JobCounts JobManager::Counts() const {
  std::lock_guard<std::mutex> lock(mu_);
  JobCounts c;
  for (const auto& [id, e] : jobs_) {
    switch (e.stored.job.state()) {
      case v1::JOB_STATE_QUEUED: ++c.queued; break;
      case v1::JOB_STATE_RUNNING: c.running_id = id; break;
      case v1::JOB_STATE_COMPLETED: ++c.completed; break;
      case v1::JOB_STATE_FAILED: ++c.failed; break;
      case v1::JOB_STATE_CANCELLED: ++c.cancelled; break;
      default: break;
    }
  }
  return c;
}

std::string JobManager::LatestFinishedJob() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::string best;
  int64_t best_ms = -1;
  for (const auto& [id, e] : jobs_) {
    // >=: jobs_ iterates in id (= submission) order, so of jobs finished within the same
    // millisecond the later one wins, deterministically.
    if (IsTerminal(e.stored.job.state()) && e.stored.job.finished_unix_ms() >= best_ms) {
      best_ms = e.stored.job.finished_unix_ms();
      best = id;
    }
  }
  return best;
}

}  // namespace pcp::shepherd

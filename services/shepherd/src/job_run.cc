#include "job_run.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <variant>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "pcp/base/absl_fmt.h"
#include "pcp/base/enum_names.h"
#include "pcp/base/format_duration.h"
#include "pcp/base/status_macros.h"
#include "pcp/base/unix_time.h"
#include "pcp/metrics/registry.h"
#include "pcp/rpc/tensor_list.h"
#include "pcp/rpc/tensor_proto.h"
#include "pcp/training/checkpoint.h"
#include "pcp/training/rng.h"
#include "pcp/training/round_budget.h"
#include "shepherd_metrics.h"
#include "spdlog/spdlog.h"

namespace pcp::shepherd {
namespace {

// The same estimate seeds as pcp-local (local_training.cc), so the numbers compare.
constexpr uint64_t kEvalSeedOffset = 1000003;

double Seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

double NormOf(const std::vector<Tensor>& delta) {
  diloco::NormAccumulator acc;
  for (const Tensor& t : delta) acc.Add(absl::MakeConstSpan(t.data<float>(), static_cast<size_t>(t.num_elements())));
  return acc.norm();
}

v1::ShepherdMessage CancelMessage(uint64_t round, const std::string& reason) {
  v1::ShepherdMessage m;
  m.mutable_cancel()->set_round(round);
  m.mutable_cancel()->set_reason(reason);
  return m;
}

}  // namespace

absl::StatusOr<std::unique_ptr<JobRun>> JobRun::Start(const RunnableJob& job, RunContext context) {
  std::unique_ptr<JobRun> run(new JobRun(job, context));
  PCP_RETURN_IF_ERROR(run->Prepare());
  return run;
}

absl::Status JobRun::Prepare() {
  const auto t0 = Clock::now();
  const AdmissionPolicy& policy = ctx_.jobs->policy();
  ValidatedJob validated;
  std::optional<Dataset> data;
  if (job_.validated != nullptr) {
    // Validated by this process's SubmitJob, against the same policy: only the data is read.
    validated = *job_.validated;
    job_.validated.reset();
    PCP_ASSIGN_OR_RETURN(Dataset read, LoadJobDataset(&validated.config, policy.data_roots),
                         _ << "loading the job's data");
    data.emplace(std::move(read));
  } else {
    // Stored by an earlier process, whose budgets may have been larger: validated once more.
    PCP_ASSIGN_OR_RETURN(validated, ValidateJob(job_.yaml, job_.file_name, job_.base_dir, policy.data_roots,
                                                policy.budgets, &data));
  }
  PCP_ASSIGN_OR_RETURN(PreparedJob prepared,
                       PrepareJob(std::move(validated.config), std::move(*data), policy.data_roots));
  prepared_ = std::make_unique<PreparedJob>(std::move(prepared));
  const JobConfig& c = prepared_->config;
  screen_ = std::make_unique<diloco::DeltaScreen>(c.diloco.screening);
  refusals_ = std::make_unique<diloco::RefusalLedger>(c.diloco.screening.quarantine_after);
  PCP_ASSIGN_OR_RETURN(std::optional<DilocoCheckpoint> ckpt,
                       ReadLatestDilocoCheckpoint(job_.dir, prepared_->param_names),
                       _ << "reading the job's latest checkpoint");
  if (ckpt.has_value() && !ckpt->model_source.empty()) {
    // The job's files may have changed since the checkpoint (an imported module edited).
    PCP_RETURN_IF_ERROR(CheckModelSource(c.model, ckpt->model_source),
                        _ << "resuming from the job's latest checkpoint");
  }
  std::vector<Tensor> momentum;  // a resumed job's; empty: zeros
  if (ckpt.has_value() && ckpt->state.slots.size() == static_cast<size_t>(c.diloco.workers)) {
    prepared_->program.initial_params.clear();  // θ comes from the checkpoint
    theta_ = std::move(ckpt->params);
    momentum = std::move(ckpt->momentum);
    state_ = std::move(ckpt->state);
    checkpoints_.NoteOnDisk(state_.round);
    PCP_RETURN_IF_ERROR(screen_->RestoreHistory(state_.screen_medians), _ << "reading the job's latest checkpoint");
    spdlog::info("job {}: resuming from the checkpoint of round {} ({} of {} rounds done)", job_.id, state_.round,
                 state_.round, c.diloco.rounds);
  } else {
    PCP_ASSIGN_OR_RETURN(theta_, TakeInitialParams(*prepared_));
    state_ = RunState{};
    for (int64_t s = 0; s < c.diloco.workers; ++s) {
      state_.slots.push_back(
          SlotState{.sampler_seed = MixSeed(static_cast<uint64_t>(c.training.seed), static_cast<uint64_t>(s))});
    }
  }
  state_.program_hash = prepared_->program_hash;
  theta_crc_ = ListCrc32c(theta_);
  if (c.diloco.streaming.enabled()) PCP_RETURN_IF_ERROR(PrepareStreaming());
  theta_encoder_ = std::make_unique<ThetaEncoder>(c.diloco.compression, ctx_.config->chunk_bytes,
                                                  prepared_->param_specs, streaming() ? &*fragments_ : nullptr);
  const OuterOptimizerOptions outer{.lr = c.diloco.outer_lr,
                                    .momentum = c.diloco.outer_momentum,
                                    .nesterov = c.diloco.nesterov};
  PCP_ASSIGN_OR_RETURN(outer_step_, streaming()
                                        ? NewFragmentOuterStep(outer, prepared_->param_specs, *fragments_, momentum)
                                        : NewWholeOuterStep(outer, prepared_->param_specs, std::move(momentum)));
  ChooseAggregation();
  publisher_ = std::make_unique<RoundPublisher>(job_.id, ctx_.jobs, total_rounds(),
                                                static_cast<uint64_t>(c.diloco.max_steps_per_round()), state_);
  if (job_.resumed) RestoreScreening(job_.progress);
  // Rounds after the checkpoint run again; their new records replace the old ones.
  ctx_.jobs->DropHistoryAfter(job_.id, state_.round);
  PCP_ASSIGN_OR_RETURN(eval_, EvalRunner::Create(prepared_->program, prepared_->data.val(), c.training.eval_iters,
                                                 static_cast<uint64_t>(c.training.seed) + kEvalSeedOffset + 1,
                                                 static_cast<int>(ctx_.config->eval_threads), ctx_.nudge));
  int64_t n_params = 0;
  for (const Tensor& t : theta_) n_params += t.num_elements();
  spdlog::info(
      "job {} ({}): {:.2f}M parameters, program {} ({} bytes), {} train tokens; {} rounds x {} inner steps, "
      "{} workers (min {}), prepared in {:.1f} s",
      job_.id, c.name, n_params / 1e6, prepared_->program_hash.substr(0, 19), prepared_->program_text->size(),
      prepared_->data.train().size(), c.diloco.rounds, c.diloco.inner_steps, c.diloco.workers, c.diloco.min_workers,
      Seconds(Clock::now() - t0));
  started_ = waiting_since_ = Clock::now();
  Publish(false);
  return absl::OkStatus();
}

uint32_t JobRun::workers_in_round() const {
  if (async()) return static_cast<uint32_t>(flights_.size());
  return round_.has_value() ? static_cast<uint32_t>(round_->running.size() + round_->results.size()) : 0;
}

JobRun::Member* JobRun::Find(const std::shared_ptr<WorkerSession>& session) {
  auto it = members_.find(session.get());
  return it == members_.end() ? nullptr : &it->second;
}

int JobRun::ClaimSlot(const std::string& supervisor_id) {
  std::vector<bool> taken(state_.slots.size(), false);
  for (const auto& [key, m] : members_) {
    if (m.slot >= 0) taken[m.slot] = true;
  }
  for (size_t s = 0; s < state_.slots.size(); ++s) {
    if (state_.slots[s].supervisor_id == supervisor_id) return taken[s] ? -1 : static_cast<int>(s);
  }
  for (size_t s = 0; s < state_.slots.size(); ++s) {
    if (state_.slots[s].supervisor_id.empty()) {
      state_.slots[s].supervisor_id = supervisor_id;
      return static_cast<int>(s);
    }
  }
  // Every slot has an owner; take over one whose owner is not connected (its data stream
  // continues with the newcomer).
  for (size_t s = 0; s < state_.slots.size(); ++s) {
    if (!taken[s]) {
      spdlog::info("job {}: slot {} passes from {} (not connected) to {}", job_.id, s, state_.slots[s].supervisor_id,
                   supervisor_id);
      state_.slots[s].supervisor_id = supervisor_id;
      return static_cast<int>(s);
    }
  }
  return -1;
}

void JobRun::AddWorker(const std::shared_ptr<WorkerSession>& session) {
  if (Find(session) != nullptr) return;
  Member& m = members_[session.get()];
  m.session = session;
  if (refusals_->quarantined(session->supervisor_id())) {
    m.phase = Phase::kQuarantined;
    spdlog::warn("job {}: worker {} stays idle (quarantined in this job)", job_.id, session->supervisor_id());
    return;
  }
  m.slot = ClaimSlot(session->supervisor_id());
  if (m.slot < 0) {
    spdlog::info("job {}: worker {} stays idle (all {} slots are taken)", job_.id, session->supervisor_id(),
                 state_.slots.size());
    return;
  }
  Assign(m);
}

void JobRun::Assign(Member& m) {
  auto it = shards_.find(m.slot);
  if (it == shards_.end()) {
    absl::StatusOr<ShardPlan> plan = ShardForSlot(*prepared_, m.slot, static_cast<int64_t>(state_.slots.size()));
    if (!plan.ok()) {
      spdlog::error("job {}: {}", job_.id, plan.status().message());
      m.phase = Phase::kFailed;
      return;
    }
    it = shards_.emplace(m.slot, *std::move(plan)).first;
  }
  const ShardPlan& plan = it->second;
  WorkerSession& s = *m.session;
  const bool send_program = !s.HasProgram(prepared_->program_hash);
  v1::ShepherdMessage msg;
  v1::Assignment* a = msg.mutable_assignment();
  a->set_job_id(job_.id);
  a->set_job_name(prepared_->config.name);
  a->set_program_hash(prepared_->program_hash);
  a->set_program_follows(send_program);
  a->set_program_bytes(prepared_->program_text->size());
  *a->mutable_hyperparameters() = HyperparametersOf(prepared_->config);
  for (const TensorSpec& spec : prepared_->param_specs) *a->add_parameters() = TensorSpecToProto(spec);
  *a->mutable_shard() = plan.shard;
  a->set_worker_rank(static_cast<uint32_t>(m.slot));
  a->set_world_size(static_cast<uint32_t>(state_.slots.size()));
  const codec::CompressionOptions& compression = prepared_->config.diloco.compression;
  a->mutable_compression()->set_up(CodecToProto(compression.up));
  a->mutable_compression()->set_down(CodecToProto(compression.down));
  a->mutable_compression()->set_up_error_feedback(compression.FeedbackUp());
  a->mutable_compression()->set_density(compression.density);
  if (streaming()) {
    const diloco::StreamingOptions& so = prepared_->config.diloco.streaming;
    a->mutable_streaming()->set_fragments(static_cast<uint32_t>(so.fragments));
    a->mutable_streaming()->set_overlap_steps(static_cast<uint32_t>(so.overlap_steps));
    a->mutable_streaming()->set_alpha(so.alpha);
  }
  s.Send(std::move(msg));
  if (send_program) {
    s.SendBlob(/*program=*/true, prepared_->program_hash, prepared_->program_text);
    s.NotePendingProgram(prepared_->program_hash);
  }
  if (plan.inline_bytes != nullptr) s.SendBlob(/*program=*/false, "shard", plan.inline_bytes);
  m.phase = Phase::kAssigning;
  m.assigned_at = Clock::now();
  ctx_.registry->NoteActivity(s.supervisor_id(), job_.id, 0);
  spdlog::info("job {}: worker {} assigned slot {} of {} ({} tokens {}; program {})", job_.id, s.supervisor_id(),
               m.slot, state_.slots.size(), plan.num_tokens, plan.inline_bytes ? "inline" : "from the shared file",
               send_program ? "sent" : "cached");
}

void JobRun::On(WorkerEvent& e) {
  struct Visitor {
    JobRun& run;
    const std::shared_ptr<WorkerSession>& s;
    void operator()(WorkerJoined&) { run.AddWorker(s); }
    void operator()(WorkerLeft&) { run.RemoveWorker(s); }
    void operator()(WorkerReady& r) { run.OnReady(s, r.ready); }
    void operator()(WorkerResult& r) { run.OnResult(s, r.round, std::move(r.delta), r.result); }
    void operator()(WorkerError& r) { run.OnError(s, r.error); }
    void operator()(WorkerResync& r) { run.OnResync(s, r.request); }
  };
  std::visit(Visitor{*this, e.session}, e.body);
}

void JobRun::RemoveWorker(const std::shared_ptr<WorkerSession>& session) {
  Member* m = Find(session);
  if (m == nullptr) return;
  if (round_.has_value() && m->slot >= 0) {
    auto r = round_->running.find(m->slot);
    if (r != round_->running.end() && r->second == session.get()) {
      round_->running.erase(r);
      spdlog::warn("job {}: worker {} left round {} ({} still running, {} results in)", job_.id,
                   session->supervisor_id(), round_->number, round_->running.size(), round_->results.size());
    }
  }
  if (async()) DropAsyncTask(session.get());
  if (m->slot >= 0) slot_left_at_[m->slot] = Clock::now();
  members_.erase(session.get());
}

void JobRun::OnReady(const std::shared_ptr<WorkerSession>& session, const v1::AssignmentReady& ready) {
  Member* m = Find(session);
  if (m == nullptr || m->phase != Phase::kAssigning) return;
  if (ready.job_id() != job_.id || ready.program_hash() != prepared_->program_hash) {
    spdlog::warn("job {}: worker {} is ready for job {} / program {}, not this one; ignored", job_.id,
                 session->supervisor_id(), ready.job_id(), ready.program_hash());
    return;
  }
  m->phase = Phase::kReady;
  spdlog::info("job {}: worker {} ready (slot {}, compiled in {} ms, {} shard tokens)", job_.id,
               session->supervisor_id(), m->slot, ready.compile_ms(), ready.shard_tokens());
}

void JobRun::OnError(const std::shared_ptr<WorkerSession>& session, const v1::Error& error) {
  Member* m = Find(session);
  if (m == nullptr) return;
  if (m->phase == Phase::kAssigning) {
    // The worker cannot take the assignment (e.g. its backend cannot run the program).
    m->phase = Phase::kFailed;
    spdlog::error("job {}: worker {} cannot take the assignment: {}", job_.id, session->supervisor_id(),
                  error.message());
  }
}

void JobRun::OnResync(const std::shared_ptr<WorkerSession>& session, const v1::ResyncRequest& request) {
  Member* m = Find(session);
  if (m == nullptr) return;
  metrics::Get(metrics::kShepherdReplicaResyncsTotal).Increment();
  m->theta_round = 0;
  if (streaming()) {
    // The worker is inside a round it was sent ahead: θ in full, nothing else.
    const uint64_t r = round_.has_value() ? round_->number : state_.round + 1;
    spdlog::warn("job {}: worker {}'s θ does not match the shepherd's ({}); sending it θ for round {} in full", job_.id,
                 session->supervisor_id(), request.reason(), r);
    absl::StatusOr<std::shared_ptr<const ChunkedList>> theta = theta_encoder_->Full(theta_);
    if (!theta.ok()) return session->Close(theta.status());
    session->SendParameters(r, *std::move(theta));
    m->theta_round = r;
    return;
  }
  if (async()) {
    spdlog::warn(
        "job {}: worker {}'s θ for round {} does not match the shepherd's ({}); sending its task again with "
        "θ in full",
        job_.id, session->supervisor_id(), request.round(), request.reason());
    DropAsyncTask(session.get());
    if (m->phase == Phase::kInRound) m->phase = Phase::kReady;
    return;
  }
  const bool in_round = round_.has_value() && round_->number == request.round() && m->slot >= 0 &&
                        round_->running.count(m->slot) != 0 && round_->running[m->slot] == session.get();
  spdlog::warn(
      "job {}: worker {}'s θ for round {} does not match the shepherd's ({}; crc32c {:08x}, expected {:08x}); "
      "{}",
      job_.id, session->supervisor_id(), request.round(), request.reason(), request.actual_crc32c(),
      request.expected_crc32c(), in_round ? "sending it θ in full" : "it gets θ in full next round");
  if (in_round) SendRound(*m);
}

void JobRun::OnResult(const std::shared_ptr<WorkerSession>& session, uint64_t round, ReceivedDelta delta,
                      const v1::RoundResult& result) {
  Member* m = Find(session);
  if (m != nullptr && async()) return OnAsyncResult(*m, round, std::move(delta), result);
  if (m != nullptr && streaming() && !round_.has_value() && round == state_.round + 1) {
    // Streaming: a worker sent this round ahead finished it before the round opened here.
    early_results_.push_back({session, round, std::move(delta), result});
    return;
  }
  if (m == nullptr || !round_.has_value() || round != round_->number) return;  // stale
  auto r = round_->running.find(m->slot);
  if (r == round_->running.end() || r->second != session.get()) return;
  round_->running.erase(r);
  m->phase = Phase::kReady;
  const JobConfig& c = prepared_->config;
  if (auto sent = round_->sent_at.find(m->slot); sent != round_->sent_at.end() && !delta.abandoned()) {
    round_time_.Add(Seconds(Clock::now() - sent->second));
  }
  if (delta.abandoned()) {
    spdlog::warn("job {}: worker {} abandoned round {} after {} steps", job_.id, session->supervisor_id(), round,
                 result.steps());
    return;
  }
  // τ steps, or with a time budget the steps the worker ran within its round's bounds.
  const RoundSteps bounds = StepsOfRound(c, round, state_.tokens_processed);
  const bool steps_ok = result.steps() >= bounds.min && result.steps() <= bounds.max;
  const uint64_t steps = steps_ok ? result.steps() : static_cast<uint64_t>(bounds.max);
  const uint64_t tokens_expected = steps * TokensPerStep(c);
  const uint64_t cursor_expected = round_->start_cursor[m->slot] + steps;
  if (!steps_ok || result.tokens_processed() != tokens_expected || result.sampler_cursor() != cursor_expected) {
    // A streamed Δ is already in the round's sum: the round must be redone without it.
    if (delta.streamed) aggregator_->Taint(round);
    session->Close(absl::InvalidArgumentError(
        absl::StrCat("RoundResult for round ", round, ": expected steps ",
                     bounds.min == bounds.max ? absl::StrCat(bounds.min)
                                              : absl::StrCat("in [", bounds.min, ", ", bounds.max, "]"),
                     ", tokens_processed ", tokens_expected, ", sampler_cursor ", cursor_expected, "; got ",
                     result.steps(), ", ", result.tokens_processed(), ", ", result.sampler_cursor())));
    return;
  }
  if (delta.streamed.has_value()) {
    // Judged on its header and summed as it came (round_sum.h).
    round_->results[m->slot] = SlotResult{{}, result, session->supervisor_id(), delta.streamed->norm, delta.streamed};
    ctx_.registry->NoteRoundDelivered(session->supervisor_id(), result);
    return;
  }
  // The norm is taken here, as the Δ arrives; the threshold is known when the round closes.
  const double norm =
      std::isfinite(result.mean_loss()) ? NormOf(delta.tensors) : std::numeric_limits<double>::infinity();
  if (!std::isfinite(norm)) {
    round_->refused.insert(m->slot);
    Refuse(session->supervisor_id(), round, Screen(*screen_, ArrivalThreshold(*screen_), DeltaNorm::Measured(norm)));
    return;
  }
  round_->results[m->slot] = SlotResult{std::move(delta.tensors), result, session->supervisor_id(), norm};
  ctx_.registry->NoteRoundDelivered(session->supervisor_id(), result);
}

bool JobRun::SendTheta(Member& m, uint64_t r) {
  WorkerSession& s = *m.session;
  std::shared_ptr<const ChunkedList> update =
      m.theta_round + 1 == r ? theta_encoder_->UpdateFrom(m.theta_round) : nullptr;
  if (update != nullptr) {
    s.SendParameters(r, std::move(update), m.theta_round);
  } else {
    absl::StatusOr<std::shared_ptr<const ChunkedList>> theta = theta_encoder_->Full(theta_);
    if (!theta.ok()) {
      s.Close(theta.status());
      return false;
    }
    s.SendParameters(r, *std::move(theta));
  }
  m.theta_round = r;
  return true;
}

void JobRun::SendRound(Member& m) {
  if (streaming()) return SendStreamingRound(m);
  const uint64_t r = round_->number;
  WorkerSession& s = *m.session;
  ExpectResultOf(s, r);
  if (!SendTheta(m, r)) return;
  SendStart(m, r, state_.slots[m.slot].sampler_cursor, theta_crc_);
  m.phase = Phase::kInRound;
  round_->running[m.slot] = m.session.get();
  round_->sent_at[m.slot] = Clock::now();
  round_->start_cursor[m.slot] = state_.slots[m.slot].sampler_cursor;
  round_->sent_to.insert(s.supervisor_id());
  ctx_.registry->NoteActivity(s.supervisor_id(), job_.id, r);
}

void JobRun::SendStart(Member& m, uint64_t round, uint64_t cursor, uint32_t theta_crc, uint64_t schedule_round) {
  const JobConfig& c = prepared_->config;
  v1::ShepherdMessage msg;
  v1::StartRound* start = msg.mutable_start_round();
  start->set_round(round);
  start->set_deadline_ms(static_cast<uint64_t>(c.diloco.round_deadline_s * 1000.0));
  // (With a time budget: the most steps the round may run, from the job's progress in tokens.)
  for (float lr : LearningRatesOfRound(c, schedule_round != 0 ? schedule_round : round, state_.tokens_processed)) {
    start->add_learning_rates(lr);
  }
  if (c.diloco.time_budget.enabled()) {
    start->set_budget_ms(c.diloco.time_budget.seconds * 1000.0);
    start->set_min_steps(static_cast<uint32_t>(StepsOfRound(c, round, state_.tokens_processed).min));
  }
  start->set_first_step(FirstStepOfRound(c, round));
  start->set_sampler_seed(state_.slots[m.slot].sampler_seed);
  start->set_sampler_cursor(cursor);
  start->set_theta_crc32c(theta_crc);
  m.session->Send(std::move(msg));
}

void JobRun::StartRound(const std::vector<Member*>& members) {
  round_.emplace(Round{});  // Round{}: clang-14 refuses emplace() without arguments for it
  round_->number = state_.round + 1;
  round_->start = Clock::now();
  round_->start_unix_ms = NowUnixMs();
  round_->deadline = round_->start + std::chrono::duration_cast<Clock::duration>(
                                         std::chrono::duration<double>(prepared_->config.diloco.round_deadline_s));
  metrics::Get(metrics::kShepherdRound, {job_.id}).Set(static_cast<double>(round_->number));
  for (const auto& [key, m] : members_) {
    if (m.slot >= 0 && m.phase != Phase::kFailed) round_->held_at_start.insert(m.slot);
  }
  std::vector<std::string> ids;
  for (Member* m : members) {
    SendRound(*m);
    ids.push_back(m->session->supervisor_id());
  }
  spdlog::info("job {}: round {}/{} started with {} workers ({})", job_.id, round_->number, total_rounds(),
               members.size(), absl::StrJoin(ids, ", "));
  if (streaming()) TakeEarlyResults();
}

JobRun::Outcome JobRun::Advance(Clock::time_point now) {
  if (!failure_.empty()) return Outcome::kFailed;
  if (std::optional<EvalRunner::Result> r = eval_->Take(); r.has_value()) {
    if (!ApplyEval(*r)) return Outcome::kFailed;
    publisher_->Report();
  }
  const JobConfig& c = prepared_->config;
  if (async() ? AsyncTasksUsed() >= AsyncTasksTotal() : JobDone(c, state_.round, state_.tokens_processed)) {
    // Resumed after the last round's checkpoint: nothing left to do.
    Publish(true);
    ctx_.jobs->Finish(job_.id, v1::JOB_STATE_COMPLETED, "");
    return Outcome::kCompleted;
  }
  for (auto& [key, m] : members_) {
    if (m.slot < 0 && m.phase != Phase::kQuarantined) {
      m.slot = ClaimSlot(m.session->supervisor_id());
      if (m.slot >= 0) Assign(m);
    }
  }
  if (async()) return AdvanceAsync(now);
  const auto grace = std::chrono::milliseconds(ctx_.config->round_start_grace_ms);
  std::vector<Member*> ready;
  bool preparing = false;  // a worker got its assignment less than the grace period ago
  for (auto& [key, m] : members_) {
    if (m.phase == Phase::kAssigning && now - m.assigned_at < grace) preparing = true;
    if (m.phase == Phase::kReady) ready.push_back(&m);
  }
  const size_t min_workers = static_cast<size_t>(c.diloco.min_workers);
  if (!round_.has_value()) {
    // Start with every slot ready; else wait up to the grace period for missing workers and
    // for ones still compiling, then start with the ready ones (at least min_workers).
    const bool full = ready.size() >= ActiveSlots();
    // Only before the run's first round, or for a worker that just left: after it, a missing
    // worker joins late (and with orphan_slots: takeover its slot is trained by the others).
    const bool grace_over = now - waiting_since_ >= grace || (closed_a_round_ && !WorkerJustLeft(now, grace));
    if (ready.empty() || ready.size() < min_workers) return Outcome::kRunning;
    if (!full && (!grace_over || preparing)) return Outcome::kRunning;
    StartRound(ready);
    return Outcome::kRunning;
  }
  Round& round = *round_;
  TakeOverOrphans();
  JoinLate(ready, now);
  // Everyone still in the round has reported, but too few results: wait for more workers.
  if (round.running.empty() && round.delivered() < min_workers) return Outcome::kRunning;
  // A worker is on its way to train an orphaned slot's task.
  if (round.running.empty() && now < round.deadline && TakeoverPending()) return Outcome::kRunning;
  if (round.running.empty() || (now >= round.deadline && round.delivered() >= min_workers)) {
    return CloseRound(now);
  }
  return Outcome::kRunning;
}

void JobRun::JoinLate(const std::vector<Member*>& ready, Clock::time_point now) {
  Round& round = *round_;
  const size_t min_workers = static_cast<size_t>(prepared_->config.diloco.min_workers);
  // Everyone still in the round has reported, but too few results: every ready worker is needed.
  const bool needed = round.running.empty() && round.delivered() < min_workers;
  std::vector<std::string> ids;
  for (Member* m : ready) {
    if (m->phase != Phase::kReady) continue;  // given an orphaned slot meanwhile (TakeOverOrphans)
    if (round.results.count(m->slot) != 0 || round.running.count(m->slot) != 0 || round.refused.count(m->slot) != 0) {
      continue;
    }
    const diloco::LateJoinQuestion question{.elapsed_s = Seconds(now - round.start),
                                            .round_s = round_time_.Get(),
                                            .others = round.running.size() + round.results.size(),
                                            .until_deadline_s = Seconds(round.deadline - now)};
    if (!needed && !diloco::WorthJoiningLate(question)) continue;
    SendRound(*m);
    ids.push_back(m->session->supervisor_id());
  }
  if (ids.empty()) return;
  spdlog::info("job {}: {} joins round {} late, {:.1f} s after its start ({} results in, {} running)", job_.id,
               absl::StrJoin(ids, ", "), round.number, Seconds(now - round.start), round.delivered(),
               round.running.size() - ids.size());
}

Clock::time_point JobRun::NextWakeup() const {
  if (round_.has_value()) return round_->deadline;
  const auto grace = std::chrono::milliseconds(ctx_.config->round_start_grace_ms);
  if (async()) return AsyncWakeup(waiting_since_ + grace);
  Clock::time_point wake = waiting_since_ + grace;
  for (const auto& [key, m] : members_) {
    if (m.phase == Phase::kAssigning) wake = std::max(wake, m.assigned_at + grace);
  }
  return wake;
}

JobRun::Outcome JobRun::CloseRound(Clock::time_point now) {
  Round& round = *round_;
  const uint64_t r = round.number;
  for (auto& [slot, key] : round.running) {
    auto it = members_.find(key);
    if (it == members_.end()) continue;
    it->second.session->AbandonRound(r);
    it->second.session->Send(CancelMessage(r, absl::StrCat("round ", r, " closed without you (deadline)")));
    it->second.phase = Phase::kReady;
    spdlog::warn("job {}: round {} closes at its deadline without worker {}", job_.id, r,
                 it->second.session->supervisor_id());
  }
  absl::StatusOr<Intake> intake = ScreenRound(round);
  if (!intake.ok()) return Fail(std::string(intake.status().message()));
  Intake& in = *intake;
  if (in.tainted) {
    constexpr const char* kTainted = "a streamed Δ broke its header after some of its chunks were summed";
    if (!streaming()) return RollBack(r, kTainted);
    if (std::optional<Outcome> o = CountRollBack(r, kTainted)) return *o;
    round.skipped = true;  // (counted once: the next check is for rounds whose Δs were all refused)
    in.used_slots.clear();
    in.ids.clear();
  } else if (in.used_slots.empty()) {
    if (!streaming()) return RollBack(r, "every Δ of the round was refused");
    if (std::optional<Outcome> o = CountRollBack(r, "every Δ of the round was refused")) return *o;
    round.skipped = true;
  }
  // The outer step modifies the momentum in place: a checkpoint still writing it goes first.
  checkpoints_.Collect();
  const auto outer_start = Clock::now();
  // θ's tensors are shared with chunk streams still being written: the outer step replaces
  // them in `next`, never writes into them.
  std::vector<Tensor> next = theta_;
  if (!in.used_slots.empty()) {
    absl::StatusOr<Combined> avg = aggregator_->Finish(r);
    if (!avg.ok()) return Fail(absl::StrCat("round ", r, ": averaging the deltas: ", avg.status().message()));
    absl::StatusOr<bool> stepped = outer_step_->Apply(r, *std::move(avg), &next);
    if (stepped.ok() && *stepped && streaming()) {
      if (absl::Status s = theta_encoder_->EncodeRound(r, theta_, &next); !s.ok()) stepped = s;
    }
    if (!stepped.ok()) return Fail(absl::StrCat("round ", r, ": outer step: ", stepped.status().message()));
    constexpr const char* kNotFinite = "θ or the outer momentum is not finite after the outer step";
    if (!*stepped && !streaming()) return RollBack(r, kNotFinite);
    if (!*stepped) {
      if (std::optional<Outcome> o = CountRollBack(r, kNotFinite)) return *o;
      next = theta_;
      round.skipped = true;
      in.used_slots.clear();
      in.ids.clear();
    } else {
      rollbacks_in_a_row_ = 0;
    }
  }
  if (!streaming()) {
    if (absl::Status s = theta_encoder_->EncodeRound(r, theta_, &next); !s.ok()) {
      return Fail(absl::StrCat("round ", r, ": encoding the θ update: ", s.message()));
    }
  }
  theta_ = std::move(next);
  theta_crc_ = ListCrc32c(theta_);
  theta_encoder_->Reset();  // chunked again when first sent
  aggregator_->DropThrough(r);
  screen_->EndRound(in.accepted_norms);  // (before SendFragment: round r + 1's sum takes the new history)
  if (streaming()) {
    if (r < total_rounds()) SendFragment(r);  // (after the last round no worker merges it)
    // A skipped round is not redone: every worker that delivered has trained on past it (sent
    // the next round ahead), so its slot's data stream moves on whether its Δ was used or not.
    for (const auto& [slot, res] : round.results) state_.slots[slot].sampler_cursor = res.result.sampler_cursor();
  }
  for (int slot : in.used_slots) {
    state_.slots[slot].sampler_cursor = round.results[slot].result.sampler_cursor();
    ++state_.slots[slot].rounds_done;
  }
  state_.round = r;
  state_.tokens_processed += in.tokens;
  // (A streaming round whose Δs were all refused keeps the last train loss.)
  if (in.weight > 0 || !state_.train_loss) state_.train_loss = in.weight > 0 ? in.loss_sum / in.weight : 0.0;
  RoundSummary summary{.round = r,
                       .last = JobDone(prepared_->config, r, state_.tokens_processed),
                       .tokens = in.tokens,
                       .round_s = Seconds(now - round.start),
                       .outer_step_s = Seconds(Clock::now() - outer_start),
                       .workers = std::move(in.ids)};
  summary.record = RecordOf(round, summary.tokens, summary.round_s, summary.outer_step_s);
  round_.reset();
  waiting_since_ = Clock::now();
  closed_a_round_ = true;
  return Conclude(summary);
}

absl::StatusOr<JobRun::Intake> JobRun::ScreenRound(Round& round) {
  const uint64_t r = round.number;
  // Every Δ is judged against the round's threshold; a refused one is left out (reject) or
  // scaled down to the threshold (clip) by the aggregator. A streamed Δ was judged on its
  // header and is in the round's sum already (or was dropped); a sender whose chunks broke its
  // header is refused, and the round redone if some of them were added (pcp/diloco/delta_sum.h).
  const RoundSeal seal = aggregator_->Seal(r);  // no chunk is added after this
  std::vector<double> norms;
  for (const auto& [slot, res] : round.results) norms.push_back(res.norm);
  const diloco::ScreenThreshold threshold = screen_->RoundThreshold(norms);
  for (const std::string& liar : seal.liars)
    Refuse(liar, r, Screen(*screen_, seal.threshold, DeltaNorm::BrokeDeclaration()));
  Intake in{.tainted = seal.tainted};
  for (auto& [slot, res] : round.results) {
    // (A streamed Δ was screened as its header arrived.)
    const diloco::ScreenVerdict verdict =
        res.streamed ? *res.streamed : Screen(*screen_, threshold, DeltaNorm::Measured(res.norm));
    if (Refused(verdict)) Refuse(res.supervisor_id, r, verdict);
    if (!Admitted(verdict)) continue;
    if (verdict.action == diloco::ScreenVerdict::kAccept) in.accepted_norms.push_back(res.norm);
    const double w = static_cast<double>(res.result.tokens_processed());
    if (!res.streamed) {
      absl::Status added = aggregator_->Add(r, Contribution{std::move(res.delta), w, verdict, res.result.mean_loss(),
                                                            res.supervisor_id});
      if (!added.ok()) return Annotate(added, absl::StrCat("round ", r, ": aggregating the deltas"));
    }
    in.weight += w;
    in.loss_sum += w * res.result.mean_loss();
    in.tokens += res.result.tokens_processed();
    in.used_slots.push_back(slot);
    in.ids.push_back(res.supervisor_id);
  }
  return in;
}

JobRun::Outcome JobRun::Conclude(const RoundSummary& summary) {
  const JobConfig& c = prepared_->config;
  const uint64_t r = summary.round;
  publisher_->Closed(summary, state_);
  // (Async: after each diloco.workers × eval_every Δs used, a synchronous round's tokens.)
  const bool eval_due = async() ? eval_due_ : r % static_cast<uint64_t>(std::max<int64_t>(c.diloco.eval_every, 1)) == 0;
  if (c.diloco.eval_every > 0 && (eval_due || summary.last)) {
    eval_->Start(r, theta_);  // θ_ is replaced, never modified, after this
  }
  if (summary.last) {
    // The job's final numbers include the final parameters' validation loss.
    if (std::optional<EvalRunner::Result> res = eval_->Finish(); res.has_value() && !ApplyEval(*res)) {
      return Outcome::kFailed;
    }
  }
  Publish(summary.last);
  if (summary.last) {
    // The job completes with its final checkpoint on disk.
    if (absl::Status s = WriteCheckpoint(/*wait=*/true); !s.ok()) {
      return Fail(absl::StrCat("writing the final checkpoint: ", s.message()));
    }
  } else if (c.diloco.checkpoint_every > 0 && r % static_cast<uint64_t>(c.diloco.checkpoint_every) == 0) {
    // Written while the next round runs; a failure is logged when it is collected.
    WriteCheckpoint(/*wait=*/false).IgnoreError();
  }
  publisher_->Report();
  if (!summary.last) return Advance(Clock::now());  // the next round starts at once if everyone is ready
  Release("job completed");
  ctx_.jobs->Finish(job_.id, v1::JOB_STATE_COMPLETED, "");
  spdlog::info("job {}: completed {} rounds in {:.1f} s; train loss {:.4f}{}; checkpoint {}", job_.id, r,
               Seconds(Clock::now() - started_), *state_.train_loss,
               state_.val_loss ? absl::StrFormat(", val loss %.4f", *state_.val_loss) : std::string(),
               LatestCheckpointPath(job_.dir));
  return Outcome::kCompleted;
}

void JobRun::Quarantine(const std::string& id, uint64_t round) {
  const int64_t count = refusals_->refusals(id);
  spdlog::error("job {}: worker {} is quarantined after {} refused Δs (round {}): no more rounds for it in this job",
                job_.id, id, count, round);
  v1::ScreeningEvent event;
  event.set_kind(v1::ScreeningEvent::WORKER_QUARANTINED);
  event.set_round(round);
  event.set_supervisor_id(id);
  event.set_refusals(static_cast<uint32_t>(count));
  ctx_.jobs->ReportScreening(job_.id, event);
  for (auto& [key, m] : members_) {
    if (m.session->supervisor_id() != id) continue;
    if (round_.has_value() && m.slot >= 0) {
      auto r = round_->running.find(m.slot);
      if (r != round_->running.end() && r->second == key) round_->running.erase(r);
    }
    // Its slot (and data stream) is free for another worker.
    m.slot = -1;
    m.phase = Phase::kQuarantined;
    m.session->Send(CancelMessage(0, absl::StrCat("quarantined in job ", job_.id, " after ", count, " refused Δs")));
    ctx_.registry->NoteActivity(id, "", 0);
  }
}

bool JobRun::ApplyEval(const EvalRunner::Result& r) {
  if (!r.val_loss.ok()) {
    Fail(absl::StrCat("estimating the validation loss after round ", r.round, ": ", r.val_loss.status().message()));
    return false;
  }
  if (r.round < state_.val_round) return true;  // an older estimate than the one we have
  state_.val_loss = *r.val_loss;
  state_.val_round = r.round;
  publisher_->ValLoss(r.round, *r.val_loss, r.seconds);
  return true;
}

void JobRun::Release(const std::string& reason) {
  for (auto& [key, m] : members_) {
    if (round_.has_value()) m.session->AbandonRound(round_->number);
    m.session->Send(CancelMessage(0, reason));
    ctx_.registry->NoteActivity(m.session->supervisor_id(), "", 0);
  }
  members_.clear();
  round_.reset();
}

void JobRun::Publish(bool final) {
  auto snap = std::make_shared<ParamsSnapshot>();
  snap->job_id = job_.id;
  snap->round = state_.round;
  snap->final = final;
  if (!prepared_->config.model.imported()) snap->model = prepared_->config.model.ToGPTConfig();
  snap->imported_logits = prepared_->imported_logits;
  snap->tokenizer = prepared_->data.tokenizer();
  snap->sample = prepared_->config.sample;
  snap->names = prepared_->param_names;
  snap->params = theta_;
  if (ctx_.publish) ctx_.publish(std::move(snap));
}

JobRun::Outcome JobRun::Fail(const std::string& why) {
  checkpoints_.Collect();  // a checkpoint being written is finished and reported first
  failure_ = why;
  spdlog::error("job {} failed: {}", job_.id, why);
  Release(absl::StrCat("job failed: ", why));
  ctx_.jobs->Finish(job_.id, v1::JOB_STATE_FAILED, why);
  return Outcome::kFailed;
}

}  // namespace pcp::shepherd

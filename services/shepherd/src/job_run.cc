#include "job_run.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <variant>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "delayed_nesterov_step.h"
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
  // With a time budget Δs run different steps: screening compares them at τ steps.
  screen_ = std::make_unique<diloco::DeltaScreen>(c.diloco.screening, c.diloco.time_budget.enabled()
                                                                          ? static_cast<uint64_t>(c.diloco.inner_steps)
                                                                          : 0);
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
    // (Streaming DiLoCo's schedule sends θ in full itself: workers draw θ₀ only without it.)
    theta_is_init_ = prepared_->program.init_recipe.has_value() && !c.diloco.streaming.enabled();
    state_ = RunState{};
    for (int64_t s = 0; s < c.diloco.workers; ++s) {
      state_.slots.push_back(
          SlotState{.sampler_seed = MixSeed(static_cast<uint64_t>(c.training.seed), static_cast<uint64_t>(s))});
    }
  }
  state_.program_hash = prepared_->program_hash;
  theta_crc_ = ListCrc32c(theta_);
  const bool streaming = c.diloco.streaming.enabled();
  if (streaming) PCP_RETURN_IF_ERROR(PrepareStreaming());
  theta_encoder_ = std::make_unique<ThetaEncoder>(c.diloco.compression, ctx_.config->chunk_bytes,
                                                  prepared_->param_specs, streaming ? &*fragments_ : nullptr);
  const OuterOptimizerOptions outer{.lr = c.diloco.outer_lr,
                                    .momentum = c.diloco.outer_momentum,
                                    .nesterov = c.diloco.nesterov};
  if (streaming) {
    PCP_ASSIGN_OR_RETURN(outer_step_, NewFragmentOuterStep(outer, prepared_->param_specs, *fragments_, momentum));
  } else if (c.diloco.mode == diloco::RoundMode::kAsync && c.diloco.async.momentum == diloco::AsyncMomentum::kDelayed) {
    PCP_ASSIGN_OR_RETURN(outer_step_, NewDelayedNesterovStep(outer, prepared_->param_specs, std::move(momentum)));
  } else {
    PCP_ASSIGN_OR_RETURN(outer_step_, NewWholeOuterStep(outer, prepared_->param_specs, std::move(momentum)));
  }
  ChooseAggregation();
  schedule_ = NewRoundSchedule(*this, streaming ? &*fragments_ : nullptr);
  publisher_ = std::make_unique<RoundPublisher>(job_.id, ctx_.jobs, schedule_->TotalRounds(),
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
  started_ = Clock::now();
  Publish(false);
  return absl::OkStatus();
}

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

Member* JobRun::Find(const std::shared_ptr<WorkerSession>& session) {
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
    m.phase = MemberPhase::kQuarantined;
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
      m.phase = MemberPhase::kFailed;
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
  a->mutable_compression()->set_ef_decay(compression.ef_decay);
  if (fragments_.has_value()) {
    const diloco::StreamingOptions& so = prepared_->config.diloco.streaming;
    a->mutable_streaming()->set_fragments(static_cast<uint32_t>(so.fragments));
    a->mutable_streaming()->set_overlap_steps(static_cast<uint32_t>(so.overlap_steps));
    a->mutable_streaming()->set_alpha(so.alpha);
  }
  if (theta_is_init_) *a->mutable_init() = InitRecipeToProto(*prepared_->program.init_recipe);
  s.Send(std::move(msg));
  if (send_program) {
    s.SendBlob(/*program=*/true, prepared_->program_hash, prepared_->program_text);
    s.NotePendingProgram(prepared_->program_hash);
  }
  if (plan.inline_bytes != nullptr) s.SendBlob(/*program=*/false, "shard", plan.inline_bytes);
  m.phase = MemberPhase::kAssigning;
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
  schedule_->Drop(*m);
  members_.erase(session.get());
}

void JobRun::OnReady(const std::shared_ptr<WorkerSession>& session, const v1::AssignmentReady& ready) {
  Member* m = Find(session);
  if (m == nullptr || m->phase != MemberPhase::kAssigning) return;
  if (ready.job_id() != job_.id || ready.program_hash() != prepared_->program_hash) {
    spdlog::warn("job {}: worker {} is ready for job {} / program {}, not this one; ignored", job_.id,
                 session->supervisor_id(), ready.job_id(), ready.program_hash());
    return;
  }
  m->phase = MemberPhase::kReady;
  spdlog::info("job {}: worker {} ready (slot {}, compiled in {} ms, {} shard tokens)", job_.id,
               session->supervisor_id(), m->slot, ready.compile_ms(), ready.shard_tokens());
}

void JobRun::OnError(const std::shared_ptr<WorkerSession>& session, const v1::Error& error) {
  Member* m = Find(session);
  if (m == nullptr) return;
  if (m->phase == MemberPhase::kAssigning) {
    // The worker cannot take the assignment (e.g. its backend cannot run the program).
    m->phase = MemberPhase::kFailed;
    spdlog::error("job {}: worker {} cannot take the assignment: {}", job_.id, session->supervisor_id(),
                  error.message());
  }
}

void JobRun::OnResync(const std::shared_ptr<WorkerSession>& session, const v1::ResyncRequest& request) {
  Member* m = Find(session);
  if (m == nullptr) return;
  metrics::Get(metrics::kShepherdReplicaResyncsTotal).Increment();
  m->theta_round = 0;
  if (DrawsInit(*m)) {  // the θ it holds was its own draw of θ₀
    spdlog::warn("job {}: worker {} drew a θ₀ that differs from the shepherd's ({}); it gets θ in full", job_.id,
                 session->supervisor_id(), request.reason());
    m->init_refused = true;
  }
  schedule_->OnResync(*m, request);
}

void JobRun::OnResult(const std::shared_ptr<WorkerSession>& session, uint64_t round, ReceivedDelta delta,
                      const v1::RoundResult& result) {
  if (Member* m = Find(session); m != nullptr) schedule_->OnResult(*m, round, std::move(delta), result);
}

bool JobRun::SendTheta(Member& m, uint64_t r) {
  WorkerSession& s = *m.session;
  if (DrawsInit(m)) {  // the worker draws θ₀ (StartRound.theta_from_init): nothing to send
    m.theta_round = r;
    return true;
  }
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
  // (The draw is checked against theta_crc32c, so θ₀ is drawn only where the CRC travels.)
  start->set_theta_from_init(DrawsInit(m) && m.theta_round == round && theta_crc != 0);
  m.session->Send(std::move(msg));
}

JobRun::Outcome JobRun::Advance(Clock::time_point now) {
  if (!failure_.empty()) return Outcome::kFailed;
  if (std::optional<EvalRunner::Result> r = eval_->Take(); r.has_value()) {
    if (!ApplyEval(*r)) return Outcome::kFailed;
    publisher_->Report();
  }
  if (schedule_->Done()) {
    // Resumed after the last round's checkpoint: nothing left to do.
    Publish(true);
    ctx_.jobs->Finish(job_.id, v1::JOB_STATE_COMPLETED, "");
    return Outcome::kCompleted;
  }
  for (auto& [key, m] : members_) {
    if (m.slot < 0 && m.phase != MemberPhase::kQuarantined) {
      m.slot = ClaimSlot(m.session->supervisor_id());
      if (m.slot >= 0) Assign(m);
    }
  }
  return schedule_->Advance(now);
}

Clock::duration JobRun::start_grace() const { return std::chrono::milliseconds(ctx_.config->round_start_grace_ms); }

absl::StatusOr<bool> JobRun::StepTheta(uint64_t r, double share) {
  // The outer step modifies the momentum in place: a checkpoint still writing it goes first.
  checkpoints_.Collect();
  // θ's tensors are shared with chunk streams still being written: the outer step replaces
  // them in `next`, never writes into them.
  std::vector<Tensor> next = theta_;
  absl::StatusOr<Combined> avg = aggregator_->Finish(r);
  if (!avg.ok()) return Annotate(avg.status(), "averaging the deltas");
  avg->share = share;
  absl::StatusOr<bool> stepped = outer_step_->Apply(r, *std::move(avg), &next);
  if (!stepped.ok()) return Annotate(stepped.status(), "outer step");
  if (!*stepped) return false;
  rollbacks_in_a_row_ = 0;
  PCP_RETURN_IF_ERROR(theta_encoder_->EncodeRound(r, theta_, &next), _ << "encoding the θ update");
  theta_ = std::move(next);
  theta_crc_ = ListCrc32c(theta_);
  theta_is_init_ = false;
  return true;
}

void JobRun::EndUpdate(uint64_t r, const std::vector<double>& accepted_norms) {
  theta_encoder_->Reset();  // chunked again when first sent
  aggregator_->DropThrough(r);
  screen_->EndRound(accepted_norms);
}

JobRun::Outcome JobRun::Conclude(const RoundSummary& summary) {
  const JobConfig& c = prepared_->config;
  const uint64_t r = summary.round;
  publisher_->Closed(summary, state_);
  // (Async: after each diloco.workers × eval_every Δs used, a synchronous round's tokens.)
  if (c.diloco.eval_every > 0 && (schedule_->EvalDue(r) || summary.last)) {
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
    schedule_->Drop(m);
    // Its slot (and data stream) is free for another worker.
    m.slot = -1;
    m.phase = MemberPhase::kQuarantined;
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
  const std::optional<uint64_t> open = schedule_ != nullptr ? schedule_->OpenRound() : std::nullopt;
  for (auto& [key, m] : members_) {
    if (open.has_value()) m.session->AbandonRound(*open);
    m.session->Send(CancelMessage(0, reason));
    ctx_.registry->NoteActivity(m.session->supervisor_id(), "", 0);
  }
  members_.clear();
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

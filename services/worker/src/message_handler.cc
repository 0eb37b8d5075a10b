#include "message_handler.h"

#include <chrono>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "pcp/base/absl_fmt.h"
#include "pcp/base/progress_report.h"
#include "pcp/base/status_macros.h"
#include "pcp/codec/encoded.h"
#include "pcp/diloco/replica.h"
#include "pcp/metrics/codec_seconds.h"
#include "pcp/metrics/registry.h"
#include "pcp/worker/round_runner.h"
#include "pcp/worker/shard_loader.h"
#include "spdlog/spdlog.h"
#include "worker_metrics.h"

namespace pcp::worker {

void RoundCancels::Peek(const v1::ShepherdMessage& m) {
  std::lock_guard<std::mutex> lock(mu_);
  if (m.has_assignment()) ++epoch_;
  if (m.has_cancel()) {
    if (m.cancel().round() == 0) {
      dropped_epoch_ = epoch_;
    } else {
      cancelled_epoch_ = epoch_;
      cancelled_round_ = m.cancel().round();
    }
  }
}

bool RoundCancels::Cancelled(uint64_t epoch, uint64_t round) {
  std::lock_guard<std::mutex> lock(mu_);
  return dropped_epoch_ == epoch || (cancelled_epoch_ == epoch && cancelled_round_ == round);
}

void RoundCancels::Reset() {
  std::lock_guard<std::mutex> lock(mu_);
  epoch_ = cancelled_epoch_ = cancelled_round_ = dropped_epoch_ = 0;
}

MessageHandler::~MessageHandler() { JoinSender(); }

void MessageHandler::JoinSender() {
  if (sender_.joinable()) sender_.join();
}

absl::Status MessageHandler::Handle(const v1::ShepherdMessage& msg, DataPieces payload) {
  switch (msg.kind_case()) {
    case v1::ShepherdMessage::kAssignment: return OnAssignment(msg.assignment());
    case v1::ShepherdMessage::kProgramChunk: {
      if (!assignment_ || !assignment_->program)
        return absl::FailedPreconditionError("program chunk without an Assignment that announced one");
      PCP_RETURN_IF_ERROR(assignment_->program->Add(msg.program_chunk()), _ << "program");
      if (assignment_->program->complete()) {
        PCP_ASSIGN_OR_RETURN(std::string text, assignment_->program->Take());
        assignment_->program.reset();
        PCP_RETURN_IF_ERROR(d_.cache->AddText(assignment_->msg.program_hash(), std::move(text)));
      }
      return MaybeReady();
    }
    case v1::ShepherdMessage::kShardChunk: {
      if (!assignment_ || !assignment_->shard)
        return absl::FailedPreconditionError("shard chunk without an Assignment with an inline shard");
      PCP_RETURN_IF_ERROR(assignment_->shard->Add(msg.shard_chunk()), _ << "shard");
      if (assignment_->shard->complete()) {
        PCP_ASSIGN_OR_RETURN(assignment_->shard_bytes, assignment_->shard->Take());
        assignment_->shard.reset();
      }
      return MaybeReady();
    }
    case v1::ShepherdMessage::kParameterChunk: return OnParameters(msg.parameter_chunk(), payload);
    case v1::ShepherdMessage::kStartRound:
      if (assignment_ && assignment_->plan) return OnStreamingStart(msg.start_round());
      return OnStartRound(msg.start_round());
    case v1::ShepherdMessage::kCancel:
      if (msg.cancel().round() == 0) {
        spdlog::info("assignment dropped: {}", msg.cancel().reason());
        assignment_.reset();
        link_->SetPhase(v1::WORKER_PHASE_IDLE, 0, 0);
      }
      return absl::OkStatus();  // a round's Cancel was seen by RoundCancels::Peek
    case v1::ShepherdMessage::kError:
      spdlog::warn("the shepherd reports an error (code {}, round {}): {}", msg.error().code(), msg.error().round(),
                   msg.error().message());
      return absl::OkStatus();
    case v1::ShepherdMessage::kJoinAck: return absl::FailedPreconditionError("a second JoinAck");
    case v1::ShepherdMessage::kHeartbeat: return absl::OkStatus();
    case v1::ShepherdMessage::KIND_NOT_SET: break;
  }
  return absl::InvalidArgumentError("ShepherdMessage with no message set (unknown kind?)");
}

absl::Status MessageHandler::OnAssignment(const v1::Assignment& a) {
  ++epoch_;
  compute_idle_.Reset();
  Assignment next;
  next.msg = a;
  for (const v1::TensorSpec& s : a.parameters()) {
    PCP_ASSIGN_OR_RETURN(TensorSpec spec, TensorSpecFromProto(s), _ << "Assignment.parameters");
    next.specs.push_back(std::move(spec));
  }
  const v1::Hyperparameters& h = a.hyperparameters();
  if (h.inner_steps() == 0 || h.batch_size() == 0 || h.block_size() == 0) {
    return absl::InvalidArgumentError("Assignment.hyperparameters: inner_steps, batch_size and block_size must be > 0");
  }
  absl::StatusOr<codec::Codec> up = CodecFromProto(a.compression().up());
  absl::StatusOr<codec::Codec> down = CodecFromProto(a.compression().down());
  if (!up.ok() || !down.ok()) {
    // A shepherd newer than this worker: say so and take no part in the job.
    const absl::Status why = Annotate(up.ok() ? down.status() : up.status(),
                                      up.ok() ? "Assignment.compression.down" : "Assignment.compression.up");
    spdlog::error("cannot take the assignment of job {}: {}", a.job_id(), why.message());
    v1::WorkerMessage error;
    *error.mutable_error() = ErrorToProto(why);
    link_->Write(error);
    assignment_.reset();
    return absl::OkStatus();
  }
  next.up = *up;
  next.down = *down;
  next.up_feedback = a.compression().up_error_feedback() && next.up != codec::Codec::kF32;
  next.up_density = a.compression().density();
  if (absl::Status s = codec::ValidateDensity(next.up_density); !s.ok()) {
    return Annotate(s, "Assignment.compression.density");
  }
  next.ef_decay = a.compression().ef_decay() == 0 ? 1.0 : a.compression().ef_decay();
  if (!(next.ef_decay > 0 && next.ef_decay <= 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("Assignment.compression.ef_decay: must be in (0, 1], got ", a.compression().ef_decay()));
  }
  if (a.has_init()) {
    PCP_ASSIGN_OR_RETURN(InitRecipe init, InitRecipeFromProto(a.init()), _ << "Assignment");
    if (init.params.size() != next.specs.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("Assignment.init: ", init.params.size(), " rules for ", next.specs.size(), " parameters"));
    }
    next.init = std::move(init);
  }
  if (a.streaming().fragments() > 1 || a.streaming().overlap_steps() > 0) {
    const v1::Streaming& st = a.streaming();
    next.streaming = {.fragments = std::max<int64_t>(1, st.fragments()),
                      .overlap_steps = st.overlap_steps(),
                      .alpha = st.alpha()};
    if (next.streaming.overlap_steps >= h.inner_steps() || !(st.alpha() >= 0 && st.alpha() < 1)) {
      return absl::InvalidArgumentError(absl::StrCat("Assignment.streaming: overlap_steps ", st.overlap_steps(),
                                                     " must be below inner_steps (", h.inner_steps(),
                                                     ") and alpha in [0, 1), not ", st.alpha()));
    }
    std::vector<int64_t> sizes;
    for (const TensorSpec& spec : next.specs) {
      if (spec.dtype != DType::kF32) return absl::InvalidArgumentError("Assignment.streaming: parameters must be f32");
      sizes.push_back(NumElements(spec.shape));
    }
    PCP_ASSIGN_OR_RETURN(diloco::FragmentPlan plan, diloco::FragmentPlan::Create(sizes, next.streaming.fragments),
                         _ << "Assignment.streaming");
    next.plan = std::move(plan);
    next.fragment_feedback.resize(static_cast<size_t>(next.streaming.fragments));
  }
  if (a.program_follows()) {
    next.program.emplace();
    next.program->Expect(a.program_hash(), static_cast<int64_t>(a.program_bytes()));
  } else if (!d_.cache->Has(a.program_hash())) {
    return absl::FailedPreconditionError(
        absl::StrCat("program ", a.program_hash(), " is not cached here, and not sent"));
  }
  if (a.shard().has_inline_tokens()) {
    next.shard.emplace();
    next.shard->Expect("shard", static_cast<int64_t>(a.shard().inline_tokens().num_tokens() * 2));
  }
  spdlog::info("assignment: job {} ({}), slot {} of {}, program {} ({}), tau {}, batch {}x{}, Δ {}{}, θ updates {}{}",
               a.job_id(), a.job_name(), a.worker_rank(), a.world_size(), a.program_hash().substr(0, 19),
               a.program_follows() ? "arriving" : "cached", h.inner_steps(), h.batch_size(), h.block_size(),
               codec::CodecName(next.up),
               next.up_feedback ? (next.ef_decay == 1 ? std::string(" with error feedback")
                                                      : absl::StrCat(" with error feedback decayed by ", next.ef_decay))
                                : std::string(),
               codec::CodecName(next.down),
               next.plan ? absl::StrCat(", streaming: ", next.streaming.fragments, " fragments, overlap ",
                                        next.streaming.overlap_steps, " steps, alpha ", next.streaming.alpha)
                         : std::string());
  assignment_ = std::move(next);
  link_->SetPhase(v1::WORKER_PHASE_PREPARING, 0, 0);
  return MaybeReady();
}

absl::Status MessageHandler::MaybeReady() {
  Assignment& a = *assignment_;
  if (a.ready || a.program || a.shard) return absl::OkStatus();
  PCP_ASSIGN_OR_RETURN(a.tokens, LoadShard(a.msg.shard(), a.shard_bytes, *d_.data_roots), _ << "loading the shard");
  a.shard_bytes.clear();
  const v1::Hyperparameters& h = a.msg.hyperparameters();
  if (a.tokens.size() < static_cast<int64_t>(h.block_size()) + 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("the shard has ", a.tokens.size(), " tokens, fewer than block_size + 1"));
  }
  absl::StatusOr<ProgramCache::Entry*> entry = d_.cache->Get(a.msg.program_hash());
  if (!entry.ok()) {
    // This worker cannot run the program: tell the shepherd, keep the stream.
    spdlog::error("cannot prepare program {}: {}", a.msg.program_hash(), entry.status().message());
    metrics::Get(metrics::kWorkerErrorsTotal, {"compile"}).Increment();
    v1::WorkerMessage error;
    *error.mutable_error() = ErrorToProto(entry.status());
    link_->Write(error);
    assignment_.reset();
    return absl::OkStatus();
  }
  a.entry = *entry;
  // The loop's AdamW state carries over only to the same assignment (a reconnect).
  const std::string owner =
      absl::StrCat(a.msg.job_id(), "/", a.msg.program_hash(), "/", a.msg.worker_rank(), "/", a.msg.world_size());
  a.reset_optimizer = a.entry->owner != owner;
  a.entry->owner = owner;
  if (a.entry->loop->num_params() != static_cast<int>(a.specs.size())) {
    return absl::InvalidArgumentError(absl::StrCat("the program takes ", a.entry->loop->num_params(),
                                                   " parameters, the assignment lists ", a.specs.size()));
  }
  // Checked before a round draws its first batch: a batch of the announced size is allocated
  // before Step compares it with the program's (4e9 rows end the process with bad_alloc).
  const TensorType& tokens = a.entry->loop->tokens_type();
  if (tokens.shape != Shape{h.batch_size(), h.block_size()}) {
    return absl::InvalidArgumentError(
        absl::StrCat("Assignment.hyperparameters: batch_size ", h.batch_size(), " and block_size ", h.block_size(),
                     " do not fit the program, which takes ", tokens.ToString(), " tokens"));
  }
  a.ready = true;
  metrics::Get(metrics::kWorkerProgramCompileSeconds).Set(static_cast<double>(a.entry->compile_ms) / 1000.0);
  v1::WorkerMessage ready;
  v1::AssignmentReady* r = ready.mutable_ready();
  r->set_job_id(a.msg.job_id());
  r->set_program_hash(a.msg.program_hash());
  r->set_compile_ms(static_cast<uint64_t>(a.entry->compile_ms));
  r->set_shard_tokens(static_cast<uint64_t>(a.tokens.size()));
  link_->Write(ready);
  link_->SetPhase(v1::WORKER_PHASE_READY, 0, 0);
  spdlog::info("ready: program compiled in {} ms, {} shard tokens{}", a.entry->compile_ms, a.tokens.size(),
               a.reset_optimizer ? "" : " (AdamW state kept from before the reconnect)");
  return absl::OkStatus();
}

absl::Status MessageHandler::OnStartRound(const v1::StartRound& start) {
  using Clock = std::chrono::steady_clock;
  if (!assignment_ || !assignment_->ready)
    return absl::FailedPreconditionError("StartRound before the assignment is ready");
  Assignment& a = *assignment_;
  const uint64_t r = start.round();
  if (start.theta_from_init() && a.resync_round != r) DrawInitialTheta(r);
  const bool theta_complete = a.theta_round == r && a.theta.size() == a.specs.size();
  if (a.resync_round == r && !theta_complete) {
    spdlog::info("StartRound {} ignored: waiting for θ in full (resync)", r);
    return absl::OkStatus();
  }
  if (!theta_complete) {
    return absl::FailedPreconditionError(absl::StrCat("StartRound ", r, " before its parameters were complete"));
  }
  if (start.theta_crc32c() != 0) {
    if (const uint32_t crc = ListCrc32c(a.theta); crc != start.theta_crc32c()) {
      RequestResync(r, start.theta_crc32c(), crc, "θ crc32c mismatch");
      return absl::OkStatus();
    }
  }
  a.resync_round = 0;
  const v1::Hyperparameters& h = a.msg.hyperparameters();
  // A time-budgeted round carries 1 to inner_steps rates and min_steps no more than them.
  const bool budgeted = start.budget_ms() > 0 && std::isfinite(start.budget_ms());
  const auto rates = static_cast<uint32_t>(start.learning_rates_size());
  if (budgeted ? (rates == 0 || rates > h.inner_steps() || start.min_steps() > rates) : rates != h.inner_steps()) {
    return absl::InvalidArgumentError(absl::StrCat("StartRound ", r, ": ", start.learning_rates_size(),
                                                   " learning rates (min_steps ", start.min_steps(), ", budget_ms ",
                                                   start.budget_ms(), ") for ", h.inner_steps(), " inner steps"));
  }
  RoundInput in{.round = r,
                .theta = std::move(a.theta),
                .reset_optimizer = a.reset_optimizer,
                .learning_rates = {start.learning_rates().begin(), start.learning_rates().end()},
                .sampler_seed = start.sampler_seed(),
                .sampler_cursor = start.sampler_cursor(),
                .batch_size = h.batch_size(),
                .block_size = h.block_size(),
                .budget_ms = budgeted ? start.budget_ms() : 0,
                .min_steps = start.min_steps(),
                .slow_factor = d_.slow_factor};
  // θ_start is kept (shared, never modified) for the next round's θ update.
  a.held = in.theta;
  a.held_round = r;
  a.theta.clear();
  a.theta_assembler.reset();
  link_->SetPhase(v1::WORKER_PHASE_TRAINING, r, 0);
  const auto t0 = Clock::now();
  const std::optional<double> wait_s = compute_idle_.MarkComputeStart(t0);
  if (wait_s) metrics::Get(metrics::kWorkerNetworkWaitSeconds).Observe(*wait_s);
  absl::StatusOr<RoundOutput> out = RunRound(*a.entry->loop, a.tokens, in, [&](uint32_t done) {
    link_->SetPhase(v1::WORKER_PHASE_TRAINING, r, done);
    return !*d_.stop && !d_.cancels->Cancelled(epoch_, r) && !link_->ended();
  });
  compute_idle_.MarkComputeEnd(Clock::now());
  if (out.ok() && wait_s) out->result.set_network_wait_ms(*wait_s * 1000.0);
  a.reset_optimizer = false;
  if (!out.ok()) {
    spdlog::error("round {} failed: {}", r, out.status().message());
    metrics::Get(metrics::kWorkerErrorsTotal, {"run"}).Increment();
    v1::WorkerMessage error;
    *error.mutable_error() = ErrorToProto(out.status(), r);
    link_->Write(error);
    link_->SetPhase(v1::WORKER_PHASE_READY, 0, 0);
    return absl::OkStatus();
  }
  const v1::RoundResult& res = out->result;
  metrics::Get(metrics::kWorkerTokensPerSecond).Set(res.tokens_per_second());
  if (!out->complete) {
    if (d_.cancels->Cancelled(epoch_, r)) {
      spdlog::info("round {} cancelled by the shepherd after {} steps", r, res.steps());
    } else if (!link_->ended()) {
      spdlog::info("round {} abandoned after {} steps (stopping)", r, res.steps());
      v1::WorkerMessage m;
      *m.mutable_round_result() = res;
      link_->Write(m);
    }
    link_->SetPhase(v1::WORKER_PHASE_READY, 0, 0);
    return absl::OkStatus();
  }
  if (std::string corruption = d_.fault->ApplyNext(&out->delta); !corruption.empty()) {
    spdlog::warn("TESTING ONLY: the Δ of round {} is corrupted ({})", r, corruption);
  }
  link_->SetPhase(v1::WORKER_PHASE_SENDING, r, res.steps());
  PCP_RETURN_IF_ERROR(SendDelta(r, std::move(out->delta), res, d_.fault->declared_norm_factor()));
  link_->SetPhase(v1::WORKER_PHASE_READY, 0, 0);
  spdlog::info("round {} done: {} steps, loss {:.4f} (last {:.4f}), {:.1f} ms/step, {:.0f} tok/s, {:.2f} s in all", r,
               res.steps(), res.mean_loss(), res.last_loss(), res.step_time_ms(), res.tokens_per_second(),
               std::chrono::duration<double>(Clock::now() - t0).count());
  return absl::OkStatus();
}

absl::Status MessageHandler::OnParameters(const v1::ParameterChunk& p, DataPieces payload) {
  if (!assignment_ || !assignment_->ready)
    return absl::FailedPreconditionError("parameters before the assignment is ready");
  Assignment& a = *assignment_;
  if (p.fragment() != 0) return OnFragment(p, payload);
  const uint64_t from = p.update_from_round();
  if (from != 0 && a.resync_round == p.round()) return absl::OkStatus();  // θ in full follows
  if (!a.theta_assembler || a.theta_round != p.round() || a.theta_update_from != from) {
    a.theta_round = p.round();
    a.theta_update_from = from;
    a.theta.clear();
    a.theta_assembler.reset();
    if (from != 0 && (a.held_round != from || a.held.size() != a.specs.size())) {
      RequestResync(p.round(), 0, 0,
                    absl::StrCat("an update from θ of round ", from, ", but θ of round ", a.held_round, " is held"));
      return absl::OkStatus();
    }
    a.theta_assembler.emplace();
    a.theta_assembler->ExpectSpecs(a.specs);
    if (from != 0) {
      a.theta_assembler->ExpectCodec(a.down, "the job's diloco.compression.down");
    } else {
      a.theta_assembler->ExpectCodec(codec::Codec::kF32, "θ in full");
    }
  }
  // The data is still in gRPC's receive buffers (or, from a shepherd that sends it inline, in
  // the message): one copy (or decode), fused with the CRC check, into θ.
  PCP_RETURN_IF_ERROR(payload.empty() ? a.theta_assembler->Add(p.chunk())
                                      : a.theta_assembler->AddPieces(p.chunk(), payload),
                      _ << "parameters of round " << p.round());
  if (!a.theta_assembler->complete()) return absl::OkStatus();
  metrics::CountCodecSeconds(metrics::kWorkerCodecSecondsTotal, a.down, metrics::CodecOp::kDecode,
                             a.theta_assembler->codec_seconds());  // 0 for θ in full
  PCP_ASSIGN_OR_RETURN(std::vector<NamedTensor> received, a.theta_assembler->Take());
  for (size_t i = 0; i < received.size(); ++i) {
    if (from == 0) {
      a.theta.push_back(std::move(received[i].tensor));
      continue;
    }
    // θ(round) = θ(from) + the decoded update, added as the shepherd adds it.
    Tensor theta = a.held[i].Clone();
    const Tensor& update = received[i].tensor;
    diloco::ApplyUpdate(absl::MakeSpan(theta.data<float>(), static_cast<size_t>(theta.num_elements())),
                        absl::MakeConstSpan(update.data<float>(), static_cast<size_t>(update.num_elements())));
    a.theta.push_back(std::move(theta));
  }
  if (from == 0 && a.resync_round == p.round()) a.resync_round = 0;  // θ in full came
  if (a.plan) TakeFullTheta(p.round());
  return absl::OkStatus();
}

void MessageHandler::DrawInitialTheta(uint64_t round) {
  using Clock = std::chrono::steady_clock;
  Assignment& a = *assignment_;
  if (!a.init.has_value()) {
    RequestResync(round, 0, 0, "θ₀ is to be drawn, but the Assignment has no init recipe");
    return;
  }
  const auto t0 = Clock::now();
  std::vector<Shape> shapes;
  for (const TensorSpec& spec : a.specs) shapes.push_back(spec.shape);
  InitRecipe recipe = *a.init;
  if (d_.fault_init) ++recipe.seed;
  absl::StatusOr<std::vector<Tensor>> drawn = DrawInit(recipe, shapes);
  if (!drawn.ok()) {
    RequestResync(round, 0, 0, absl::StrCat("drawing θ₀: ", drawn.status().message()));
    return;
  }
  a.theta = *std::move(drawn);
  a.theta_round = round;
  a.theta_update_from = 0;
  a.theta_assembler.reset();
  spdlog::info("θ for round {} drawn from the job's init recipe (seed {}) in {:.0f} ms", round, a.init->seed,
               std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
}

void MessageHandler::RequestResync(uint64_t round, uint32_t expected_crc, uint32_t actual_crc,
                                   const std::string& reason) {
  Assignment& a = *assignment_;
  spdlog::warn("θ for round {} does not match the shepherd's ({}); asking for it in full", round, reason);
  metrics::Get(metrics::kWorkerReplicaMismatchesTotal).Increment();
  a.resync_round = round;
  a.theta.clear();
  a.theta_assembler.reset();
  v1::WorkerMessage m;
  v1::ResyncRequest* q = m.mutable_resync();
  q->set_round(round);
  q->set_expected_crc32c(expected_crc);
  q->set_actual_crc32c(actual_crc);
  q->set_reason(reason);
  link_->Write(m);
}

absl::Status MessageHandler::SendDelta(uint64_t round, std::vector<Tensor> delta, const v1::RoundResult& result,
                                       double norm_factor) {
  Assignment& a = *assignment_;
  PCP_RETURN_IF_ERROR(Compensate(delta, a.feedback));
  std::vector<NamedTensor> named;
  for (size_t i = 0; i < delta.size(); ++i) named.push_back({a.specs[i].name, std::move(delta[i])});
  return StreamDelta(epoch_, round, a.up, a.up_density, std::move(named), result, norm_factor);
}

absl::Status MessageHandler::Compensate(std::vector<Tensor>& delta, std::vector<codec::ErrorFeedback>& feedback) {
  const Assignment& a = *assignment_;
  if (!a.up_feedback) return absl::OkStatus();
  const metrics::CodecTimer timer(metrics::kWorkerCodecSecondsTotal, a.up, metrics::CodecOp::kEncode);
  // What the codec loses this round goes out with the next Δ of the same tensors.
  feedback.resize(delta.size());
  for (size_t i = 0; i < delta.size(); ++i) {
    PCP_RETURN_IF_ERROR(feedback[i].set_decay(a.ef_decay));  // checked with the assignment
    PCP_RETURN_IF_ERROR(feedback[i].Compensate(
        a.up, absl::MakeSpan(delta[i].data<float>(), static_cast<size_t>(delta[i].num_elements())), 0, a.up_density));
  }
  return absl::OkStatus();
}

absl::Status MessageHandler::StreamDelta(uint64_t epoch, uint64_t round, codec::Codec codec, double density,
                                         std::vector<NamedTensor> named, const v1::RoundResult& result,
                                         double norm_factor) {
  // The header first: the Δ's norm as the shepherd will decode it, so that it can judge the Δ
  // before the chunks and add them to the round's sum as they arrive.
  double squares = 0;
  for (const NamedTensor& t : named) {
    PCP_ASSIGN_OR_RETURN(const double s,
                         codec::DecodedSumOfSquares(codec,
                                                    absl::MakeConstSpan(t.tensor.data<float>(),
                                                                        static_cast<size_t>(t.tensor.num_elements())),
                                                    0, density));
    squares += s;
  }
  v1::WorkerMessage m;
  v1::ResultHeader* header = m.mutable_result_header();
  header->set_round(round);
  header->set_steps(result.steps());
  header->set_tokens_processed(result.tokens_processed());
  // (+inf for a Δ that is not finite: the shepherd refuses it as such.)
  header->set_delta_norm(std::isfinite(squares) ? std::sqrt(squares) * norm_factor
                                                : std::numeric_limits<double>::infinity());
  if (!link_->Write(m)) return link_->status();
  m.Clear();
  PCP_ASSIGN_OR_RETURN(TensorListChunker chunker,
                       TensorListChunker::Create(std::move(named), ChunkOptions{.chunk_bytes = d_.chunk_bytes,
                                                                                .codec = codec,
                                                                                .density = density}));
  while (!chunker.done()) {
    if (d_.cancels->Cancelled(epoch, round)) return absl::OkStatus();  // the round closed without us
    v1::ResultChunk* chunk = m.mutable_result_chunk();
    chunk->set_round(round);
    ChunkPayload payload;  // sent from Δ itself (or its encoding), not copied into the message
    chunker.Next(chunk->mutable_chunk(), &payload);
    if (!link_->Write(m, payload)) return link_->status();
  }
  metrics::CountCodecSeconds(metrics::kWorkerCodecSecondsTotal, codec, metrics::CodecOp::kEncode,
                             chunker.codec_seconds());
  m.Clear();
  *m.mutable_round_result() = result;
  // Tells the supervisor this process did useful work: if it dies now, it is no crash loop.
  if (link_->Write(m)) ReportProgress();
  return absl::OkStatus();
}

}  // namespace pcp::worker

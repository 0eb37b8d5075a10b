// MessageHandler's Streaming DiLoCo rounds (message_handler.h; pcp/diloco/streaming.h).
//
// The loop keeps the worker's own θ from round to round. `held` is the replica of the
// shepherd's θ: θ in full at the start (or after a resync), then one fragment per round
// (ParameterChunk.fragment), each checked against the shepherd's CRC of the whole θ. Round
// r's StartRound arrives while round r − 1 runs; round r merges the fragment of round r − 1
// overlap_steps steps in, waiting for it there when it is late, and sends its own fragment's
// Δ = held − local from a background thread while round r + 1 trains.
#include <algorithm>
#include <chrono>

#include "absl/strings/str_cat.h"
#include "message_handler.h"
#include "pcp/base/absl_fmt.h"
#include "pcp/base/status_macros.h"
#include "pcp/diloco/replica.h"
#include "pcp/metrics/codec_seconds.h"
#include "pcp/metrics/registry.h"
#include "pcp/rpc/tensor_fragments.h"
#include "pcp/worker/round_runner.h"

#include "spdlog/spdlog.h"

namespace pcp::worker {
namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

}  // namespace

absl::Status MessageHandler::OnStreamingStart(const v1::StartRound& start) {
  queued_starts_.push_back(start);
  if (in_round_) return absl::OkStatus();  // taken in turn by the loop below
  while (!queued_starts_.empty() && assignment_ && assignment_->plan && !*d_.stop) {
    const v1::StartRound next = queued_starts_.front();
    queued_starts_.pop_front();
    in_round_ = true;
    absl::Status s = RunStreamingRound(next);
    in_round_ = false;
    if (s.ok()) s = pump_error_;
    pump_error_ = absl::OkStatus();
    if (!s.ok()) return s;
    // What arrived during the round and ends it (a new Assignment, a Cancel of the job).
    while (!deferred_.empty()) {
      const v1::ShepherdMessage m = std::move(deferred_.front());
      deferred_.pop_front();
      queued_starts_.clear();
      PCP_RETURN_IF_ERROR(Handle(m));
    }
  }
  if (!assignment_ || !assignment_->plan) queued_starts_.clear();
  if (assignment_ && queued_starts_.empty()) link_->SetPhase(v1::WORKER_PHASE_READY, 0, 0);
  return absl::OkStatus();
}

absl::Status MessageHandler::RunStreamingRound(const v1::StartRound& start) {
  Assignment& a = *assignment_;
  const uint64_t r = start.round();
  const v1::Hyperparameters& h = a.msg.hyperparameters();
  if (a.held.size() != a.specs.size()) {
    if (a.resync_round != 0) {
      spdlog::info("StartRound {} ignored: waiting for θ in full (resync)", r);
      return absl::OkStatus();
    }
    return absl::FailedPreconditionError(absl::StrCat("StartRound ", r, " before θ in full"));
  }
  if (start.learning_rates_size() < 1 || start.learning_rates_size() > static_cast<int>(h.inner_steps())) {
    return absl::InvalidArgumentError(absl::StrCat("StartRound ", r, ": ", start.learning_rates_size(),
                                                   " learning rates; a streaming round has 1 to ", h.inner_steps()));
  }
  if (start.theta_crc32c() != 0 && a.held_round == r) {
    if (const uint32_t crc = ListCrc32c(a.held); crc != start.theta_crc32c()) {
      RequestResync(r, start.theta_crc32c(), crc, "θ crc32c mismatch");
      return absl::OkStatus();
    }
  }
  RoundInput in{.round = r,
                .learning_rates = {start.learning_rates().begin(), start.learning_rates().end()},
                .sampler_seed = start.sampler_seed(),
                .sampler_cursor = start.sampler_cursor(),
                .batch_size = h.batch_size(),
                .block_size = h.block_size(),
                .slow_factor = d_.slow_factor};
  link_->SetPhase(v1::WORKER_PHASE_TRAINING, r, 0);
  const auto t0 = Clock::now();
  // Idle since the last round's compute (waiting for this StartRound or θ in full), plus the
  // waits for a late fragment inside the round (BeforeStep).
  const std::optional<double> idle = compute_idle_.MarkComputeStart(t0);
  double wait_s = idle.value_or(0);
  bool merge_failed = false;
  absl::StatusOr<RoundOutput> out = RunRound(*a.entry->loop, a.tokens, in, [&](uint32_t done) {
    link_->SetPhase(v1::WORKER_PHASE_TRAINING, r, done);
    if (!BeforeStep(r, done, &wait_s)) {
      merge_failed = true;
      return false;
    }
    return !*d_.stop && !d_.cancels->Cancelled(epoch_, r) && !link_->ended() && deferred_.empty();
  });
  if (!out.ok()) {
    spdlog::error("round {} failed: {}", r, out.status().message());
    metrics::Get(metrics::kWorkerErrorsTotal, {"run"}).Increment();
    v1::WorkerMessage error;
    *error.mutable_error() = ErrorToProto(out.status(), r);
    link_->Write(error);
    return absl::OkStatus();
  }
  compute_idle_.MarkComputeEnd(Clock::now());
  if (idle.has_value() || wait_s > 0) {
    metrics::Get(metrics::kWorkerNetworkWaitSeconds).Observe(wait_s);
    out->result.set_network_wait_ms(wait_s * 1000.0);
  }
  const v1::RoundResult& res = out->result;
  metrics::Get(metrics::kWorkerTokensPerSecond).Set(res.tokens_per_second());
  if (!out->complete) {
    spdlog::info("round {} stopped after {} steps ({})", r, res.steps(),
                 merge_failed ? "its merge did not come" : "cancelled, stopping or a new assignment");
    return absl::OkStatus();
  }
  // Δ of this round's fragment: the replica's values minus the loop's.
  const int64_t p = a.plan->FragmentOfRound(r);
  PCP_ASSIGN_OR_RETURN(std::vector<Tensor> local, a.entry->loop->GetParams());
  PCP_ASSIGN_OR_RETURN(std::vector<Tensor> delta,
                       Subtract(GatherFragment(*a.plan, p, a.held), GatherFragment(*a.plan, p, local)));
  if (std::string corruption = d_.fault->ApplyNext(&delta); !corruption.empty()) {
    spdlog::warn("TESTING ONLY: the Δ of round {} is corrupted ({})", r, corruption);
  }
  const double norm_factor = d_.fault->declared_norm_factor();
  PCP_RETURN_IF_ERROR(Compensate(delta, a.fragment_feedback[static_cast<size_t>(p)]));
  const std::vector<TensorSpec> specs = FragmentSpecs(*a.plan, p, a.specs);
  std::vector<NamedTensor> named;
  for (size_t i = 0; i < delta.size(); ++i) named.push_back({specs[i].name, std::move(delta[i])});
  // Sent while the next round trains (one Δ in flight: the one before is out by now).
  JoinSender();
  auto send = [this, epoch = epoch_, r, codec = a.up, density = a.up_density, named = std::move(named), res,
               norm_factor]() mutable {
    absl::Status s = StreamDelta(epoch, r, codec, density, std::move(named), res, norm_factor);
    if (!s.ok()) spdlog::warn("sending the Δ of round {}: {}", r, s.message());
  };
  if (d_.send_inline) {
    send();
  } else {
    sender_ = std::thread(std::move(send));
  }
  spdlog::info(
      "round {} done: fragment {} ({} values), {} steps, loss {:.4f} (last {:.4f}), {:.1f} ms/step, "
      "{:.2f} s in all, {:.2f} s waiting for the network",
      r, p, a.plan->elements(p), res.steps(), res.mean_loss(), res.last_loss(), res.step_time_ms(), SecondsSince(t0),
      wait_s);
  return absl::OkStatus();
}

bool MessageHandler::BeforeStep(uint64_t r, uint32_t done, double* wait_s) {
  Assignment& a = *assignment_;
  if (done == static_cast<uint32_t>(a.streaming.overlap_steps) && a.held_round < r) {
    // The fragment of round r − 1 is due: wait for it (compute idle: network wait).
    const auto t0 = Clock::now();
    while (a.held_round < r) {
      if (*d_.stop || link_->ended() || d_.cancels->Cancelled(epoch_, r) || !deferred_.empty() || !pump_error_.ok()) {
        return false;
      }
      PumpOne(std::chrono::milliseconds(100));
      if (!assignment_) return false;
    }
    *wait_s += SecondsSince(t0);
  }
  if (a.load_local) {
    absl::Status s =
        a.reset_optimizer ? a.entry->loop->SetParams(a.held) : a.entry->loop->LoadParamsKeepOptimizer(a.held);
    a.reset_optimizer = false;
    a.load_local = false;
    a.pending_fragment = -1;
    if (!s.ok()) {
      pump_error_ = Annotate(s, "loading θ");
      return false;
    }
  }
  if (a.pending_fragment >= 0 && done >= static_cast<uint32_t>(a.streaming.overlap_steps)) {
    absl::StatusOr<std::vector<Tensor>> local = a.entry->loop->GetParams();
    if (!local.ok()) {
      pump_error_ = local.status();
      return false;
    }
    const int64_t p = a.pending_fragment;
    std::vector<Tensor> mixed = GatherFragment(*a.plan, p, a.held);
    if (a.streaming.overlap_steps > 0) {
      const std::vector<Tensor> mine = GatherFragment(*a.plan, p, *local);
      for (size_t i = 0; i < mixed.size(); ++i) {
        // θ_local ← α·θ_local + (1 − α)·θ_global, into `mixed` (which holds θ_global).
        std::vector<float> g(mixed[i].data<float>(), mixed[i].data<float>() + mixed[i].num_elements());
        std::copy_n(mine[i].data<float>(), mine[i].num_elements(), mixed[i].data<float>());
        diloco::MixInto(absl::MakeSpan(mixed[i].data<float>(), g.size()), g, static_cast<float>(a.streaming.alpha));
      }
    }
    absl::Status s = ScatterFragment(*a.plan, p, mixed, &*local);
    if (s.ok()) s = a.entry->loop->LoadParamsKeepOptimizer(*local);
    a.pending_fragment = -1;
    if (!s.ok()) {
      pump_error_ = Annotate(s, "merging a fragment");
      return false;
    }
  }
  return true;
}

bool MessageHandler::PumpOne(std::chrono::milliseconds timeout) {
  return link_->Pump(
      [this](const v1::ShepherdMessage& m, DataPieces payload) {
        if (!pump_error_.ok()) return;
        switch (m.kind_case()) {
          case v1::ShepherdMessage::kParameterChunk: pump_error_ = OnParameters(m.parameter_chunk(), payload); return;
          case v1::ShepherdMessage::kStartRound: queued_starts_.push_back(m.start_round()); return;
          case v1::ShepherdMessage::kHeartbeat: return;
          case v1::ShepherdMessage::kError: pump_error_ = Handle(m); return;
          case v1::ShepherdMessage::kCancel:
            if (m.cancel().round() != 0) return;  // RoundCancels saw it
            [[fallthrough]];
          default: deferred_.push_back(m);  // ends the round; handled after it
        }
      },
      timeout);
}

void MessageHandler::TakeFullTheta(uint64_t round) {
  Assignment& a = *assignment_;
  a.held = std::move(a.theta);
  a.held_round = round;
  a.resync_round = 0;
  a.theta.clear();
  a.theta_assembler.reset();
  a.load_local = true;
  a.pending_fragment = -1;
  a.fragment_assembler.reset();
}

absl::Status MessageHandler::OnFragment(const v1::ParameterChunk& p, DataPieces payload) {
  Assignment& a = *assignment_;
  if (!a.plan) return absl::InvalidArgumentError("a fragment of θ, but the assignment is not streaming");
  if (p.fragment() > static_cast<uint64_t>(a.plan->fragments())) {
    return absl::InvalidArgumentError(
        absl::StrCat("ParameterChunk.fragment ", p.fragment(), " of ", a.plan->fragments(), " fragments"));
  }
  if (a.resync_round != 0) return absl::OkStatus();  // θ in full follows
  const int64_t f = static_cast<int64_t>(p.fragment()) - 1;
  if (!a.fragment_assembler || a.fragment_round != p.round() || a.fragment_index != f) {
    if (a.fragment_skip && a.fragment_round == p.round() && a.fragment_index == f) return absl::OkStatus();
    a.fragment_round = p.round();
    a.fragment_index = f;
    a.fragment_skip = false;
    a.fragment_assembler.reset();
    if (a.held_round >= p.round()) {
      a.fragment_skip = true;  // θ for that round came in full meanwhile
      return absl::OkStatus();
    }
    if (a.held_round + 1 != p.round() || a.held.size() != a.specs.size()) {
      RequestResync(p.round(), 0, 0,
                    absl::StrCat("a fragment for θ of round ", p.round(), ", but θ of round ", a.held_round,
                                 " is held"));
      return absl::OkStatus();
    }
    a.fragment_assembler.emplace();
    a.fragment_assembler->ExpectSpecs(FragmentSpecs(*a.plan, f, a.specs));
    if (p.update_from_round() != 0) {
      a.fragment_assembler->ExpectCodec(a.down, "the job's diloco.compression.down");
    } else {
      a.fragment_assembler->ExpectCodec(codec::Codec::kF32, "a fragment's values");
    }
  }
  PCP_RETURN_IF_ERROR(payload.empty() ? a.fragment_assembler->Add(p.chunk())
                                      : a.fragment_assembler->AddPieces(p.chunk(), payload),
                      _ << "fragment " << f << " of round " << p.round());
  if (!a.fragment_assembler->complete()) return absl::OkStatus();
  metrics::CountCodecSeconds(metrics::kWorkerCodecSecondsTotal, a.down, metrics::CodecOp::kDecode,
                             a.fragment_assembler->codec_seconds());
  PCP_ASSIGN_OR_RETURN(std::vector<NamedTensor> received, a.fragment_assembler->Take());
  a.fragment_assembler.reset();
  std::vector<Tensor> values = GatherFragment(*a.plan, f, a.held);
  for (size_t i = 0; i < values.size(); ++i) {
    const Tensor& got = received[i].tensor;
    const size_t n = static_cast<size_t>(got.num_elements());
    if (p.update_from_round() != 0) {
      // θ_p(round) = θ_p(round − 1) + the decoded update, added as the shepherd adds it.
      diloco::ApplyUpdate(absl::MakeSpan(values[i].data<float>(), n), absl::MakeConstSpan(got.data<float>(), n));
    } else {
      std::copy_n(got.data<float>(), n, values[i].data<float>());
    }
  }
  std::vector<Tensor> held = a.held;
  PCP_RETURN_IF_ERROR(ScatterFragment(*a.plan, f, values, &held));
  if (p.theta_crc32c() != 0) {
    if (const uint32_t crc = ListCrc32c(held); crc != p.theta_crc32c()) {
      RequestResync(p.round(), p.theta_crc32c(), crc, absl::StrCat("θ crc32c mismatch after fragment ", f));
      return absl::OkStatus();
    }
  }
  a.held = std::move(held);
  a.held_round = p.round();
  a.pending_fragment = f;
  return absl::OkStatus();
}

}  // namespace pcp::worker

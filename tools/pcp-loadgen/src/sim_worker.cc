#include "sim_worker.h"

#include <grpcpp/impl/codegen/proto_utils.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "pcp/base/absl_fmt.h"
#include "pcp/rpc/grpc_status.h"
#include "pcp/rpc/tensor_proto.h"
#include "spdlog/spdlog.h"

namespace pcp::loadgen {
namespace {

constexpr char kConnectMethod[] = "/pcp.v1.Training/Connect";

grpc::ByteBuffer ToByteBuffer(const v1::WorkerMessage& message) {
  grpc::ByteBuffer buffer;
  bool own = false;
  (void)grpc::SerializationTraits<v1::WorkerMessage>::Serialize(message, &buffer, &own);
  return buffer;
}

std::string HostName() {
  char name[256] = {};
  if (gethostname(name, sizeof(name) - 1) != 0) return "";
  return name;
}

// A blob (program, shard) is complete with the chunk that ends at its total size.
bool EndsBlob(const v1::BlobChunk& c) { return c.offset() + c.data().size() >= c.total_bytes(); }

// Codes that mean the loadgen spoke the protocol wrongly or was refused for good.
bool IsFatal(grpc::StatusCode code) {
  return code == grpc::StatusCode::INVALID_ARGUMENT || code == grpc::StatusCode::FAILED_PRECONDITION ||
         code == grpc::StatusCode::PERMISSION_DENIED || code == grpc::StatusCode::UNAUTHENTICATED ||
         code == grpc::StatusCode::UNIMPLEMENTED;
}

}  // namespace

// One Training.Connect call. Deleted by itself when gRPC is done with it (OnDone).
class SimWorker::Stream final : public grpc::ClientBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer> {
 public:
  Stream(SimWorker* worker, uint64_t generation) : worker_(worker), generation_(generation) {}
  void OnReadDone(bool ok) override { worker_->OnReadDone(this, ok); }
  void OnWriteDone(bool ok) override { worker_->OnWriteDone(this, ok); }
  void OnDone(const grpc::Status& status) override {
    worker_->OnDone(this, status);
    delete this;
  }

  grpc::ClientContext context;
  grpc::ByteBuffer read_buffer;
  uint64_t generation() const { return generation_; }

 private:
  SimWorker* const worker_;
  const uint64_t generation_;
};

SimWorker::SimWorker(int index, FleetContext* ctx, std::shared_ptr<grpc::Channel> channel, Behaviour behaviour)
    : index_(index),
      id_(absl::StrFormat("%s-%04d", ctx->options->id_prefix, index)),
      ctx_(ctx),
      channel_(std::move(channel)),
      stub_(channel_),
      behaviour_(std::move(behaviour)),
      rng_(ctx->options->seed * 1000003ULL + static_cast<uint64_t>(index)) {}

SimWorker::~SimWorker() = default;

void SimWorker::Start() {
  Stream* s = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopped_ || stream_ != nullptr) return;
    s = OpenStream();
  }
  StartStream(s);
}

// Outside mu_: gRPC may run a reaction inline.
void SimWorker::StartStream(Stream* s) {
  s->StartRead(&s->read_buffer);
  s->StartCall();
  Pump();  // the Join
}

bool SimWorker::finished() const {
  std::lock_guard<std::mutex> lock(mu_);
  return done_;
}

void SimWorker::Stop() {
  Stream* s = nullptr;
  bool resume_read = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopped_ = true;
    if (stream_ == nullptr) {
      done_ = true;
      return;
    }
    if (finishing_) return;
    s = stream_;
    resume_read = PlanDrop();
  }
  CancelHeld(s, resume_read);
}

bool SimWorker::PlanDrop() {
  planned_drop_ = true;
  bool resume_read = false;
  if (paused_) {
    paused_ = false;
    resume_read = read_parked_;
    read_parked_ = false;
  }
  stream_->AddHold();
  return resume_read;
}

void SimWorker::CancelHeld(Stream* s, bool resume_read) {
  s->context.TryCancel();
  if (resume_read) s->StartRead(&s->read_buffer);  // fails at once; the read failure ends the stream
  s->RemoveHold();
}

// Under mu_. The caller starts it with StartStream once the lock is released.
SimWorker::Stream* SimWorker::OpenStream() {
  ResetStreamState();
  ++incarnation_;
  auto* s = new Stream(this, ++generation_);
  stream_ = s;
  s->context.set_wait_for_ready(true);
  stub_.PrepareBidiStreamingCall(&s->context, kConnectMethod, grpc::StubOptions(), s);
  v1::WorkerMessage hello;
  v1::Join* j = hello.mutable_join();
  j->set_protocol_version(v1::PROTOCOL_VERSION_1);
  j->set_supervisor_id(id_);
  j->set_pid(static_cast<int32_t>(getpid()));
  j->set_incarnation(incarnation_);
  j->set_backend(v1::BACKEND_CPU);
  j->set_device("pcp-loadgen simulated worker");
  j->set_threads(1);
  j->set_version("pcp-loadgen");
  j->set_host(HostName());
  j->add_features(v1::WORKER_FEATURE_THETA_FROM_INIT);
  Enqueue(hello, Kind::kControl);
  // The base hold keeps the reactor alive until the stream's reads have failed (OnReadDone),
  // whatever writes the timers still start.
  s->AddHold();
  return s;
}

// Under mu_.
void SimWorker::ResetStreamState() {
  finishing_ = paused_ = read_parked_ = writing_ = pace_timer_ = false;
  planned_drop_ = false;
  queue_.clear();
  heartbeat_seq_ = 0;
  assignment_.reset();
  ++assignment_epoch_;
  program_done_ = shard_done_ = true;
  ready_sent_ = false;
  theta_round_ = theta_complete_round_ = 0;
  theta_bytes_ = 0;
  round_ = cancelled_round_ = 0;
  drop_at_ = DropAt::kNone;
  last_delta_sent_.reset();
  ResetStreaming();
}

// Under mu_.
void SimWorker::Enqueue(const v1::WorkerMessage& m, Kind kind, uint64_t round) {
  grpc::ByteBuffer b = ToByteBuffer(m);
  const int64_t n = static_cast<int64_t>(b.Length());
  queue_.push_back(Item{std::move(b), kind, round, n});
}

void SimWorker::Pump() {
  Stream* s = nullptr;
  grpc::ByteBuffer* buffer = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stream_ == nullptr || finishing_ || writing_ || paused_ || queue_.empty()) return;
    Item& next = queue_.front();
    if (next.kind == Kind::kDelta && behaviour_.slow_mbit > 0) {
      // Paced: the chunk may start once the bytes before it have had their time at the rate.
      const auto due = send_start_ + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(
                                         static_cast<double>(send_bytes_) * 8.0 / (behaviour_.slow_mbit * 1e6)));
      if (Clock::now() < due) {
        if (!pace_timer_) {
          pace_timer_ = true;
          const uint64_t gen = generation_;
          ctx_->timers->At(due, [this, gen] {
            {
              std::lock_guard<std::mutex> lock(mu_);
              if (gen != generation_) return;
              pace_timer_ = false;
            }
            Pump();
          });
        }
        return;
      }
    }
    writing_ = true;
    s = stream_;
    buffer = &next.buffer;  // a deque keeps its elements in place while others are added
    s->AddHold();
  }
  s->StartWrite(buffer);
  s->RemoveHold();
}

void SimWorker::OnWriteDone(Stream* s, bool ok) {
  (void)s;
  {
    std::lock_guard<std::mutex> lock(mu_);
    writing_ = false;
    if (queue_.empty()) return;
    Item item = std::move(queue_.front());
    queue_.pop_front();
    if (!ok) return;  // the stream is broken; its reads fail too, and OnDone follows
    ctx_->timeline->bytes_out.fetch_add(item.bytes, std::memory_order_relaxed);
    if (item.kind == Kind::kDelta) {
      send_bytes_ += item.bytes;
      ++delta_chunks_sent_;
      const SyntheticDelta* sending = DeltaFor(item.round);
      if (drop_at_ == DropAt::kSending && sending != nullptr &&
          delta_chunks_sent_ >= static_cast<int64_t>(drop_fraction_ * static_cast<double>(sending->num_chunks()))) {
        drop_at_ = DropAt::kNone;
        const uint64_t gen = generation_;
        ctx_->timers->After(std::chrono::milliseconds(0), [this, gen] { Drop(gen, "while sending its delta"); });
      }
    } else if (item.kind == Kind::kResult) {
      const auto now = Clock::now();
      ctx_->timeline->DeltaSent(item.round, now);
      last_delta_sent_ = now;
    }
  }
  Pump();
}

void SimWorker::OnReadDone(Stream* s, bool ok) {
  if (!ok) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      finishing_ = true;
    }
    s->RemoveHold();  // the base hold: OnDone may come now
    return;
  }
  const int64_t bytes = static_cast<int64_t>(s->read_buffer.Length());
  bool drop = false;
  bool read_more = true;
  {
    std::lock_guard<std::mutex> lock(mu_);
    v1::ShepherdMessage m;
    absl::Status parsed = parser_.Parse(&s->read_buffer, kParameterChunkDataPath, &m);
    if (!parsed.ok()) {
      ctx_->Fail(absl::InvalidArgumentError(absl::StrCat(id_, ": from the shepherd: ", parsed.message())));
      drop = true;
    } else {
      int64_t payload = 0;
      for (absl::string_view piece : parser_.payload()) payload += static_cast<int64_t>(piece.size());
      drop = Handle(m, payload);
    }
    parser_.TakePayload();  // θ's bytes are not kept
    // Counted after Handle, so that a round's first θ chunk counts in that round's window.
    ctx_->timeline->bytes_in.fetch_add(bytes, std::memory_order_relaxed);
    if (drop) planned_drop_ = true;
    if (paused_) {
      read_parked_ = true;
      read_more = false;
    }
  }
  if (drop) s->context.TryCancel();
  Pump();
  if (read_more) s->StartRead(&s->read_buffer);
}

void SimWorker::OnDone(Stream* s, const grpc::Status& status) {
  std::lock_guard<std::mutex> lock(mu_);
  if (stream_ == s) stream_ = nullptr;
  const bool ours = planned_drop_;
  ResetStreamState();
  if (!ours && !ctx_->stopping && IsFatal(status.error_code())) {
    ctx_->Fail(absl::Status(static_cast<absl::StatusCode>(status.error_code()),
                            absl::StrCat(id_, ": the shepherd ended the stream: ", status.error_message())));
  } else if (!ours && !ctx_->stopping) {
    spdlog::warn("{}: stream ended (code {}): {}; reconnecting", id_, static_cast<int>(status.error_code()),
                 status.error_message());
  }
  if (stopped_ || ctx_->stopping) {
    done_ = true;
    return;
  }
  ctx_->timers->After(std::chrono::milliseconds(ctx_->options->reconnect_ms), [this] {
    Stream* next = nullptr;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopped_ || ctx_->stopping) {
        done_ = true;
        return;
      }
      if (stream_ != nullptr) return;
      next = OpenStream();
    }
    StartStream(next);
  });
}

void SimWorker::Drop(uint64_t generation, const char* where) {
  Stream* s = nullptr;
  bool resume_read = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (generation != generation_ || stream_ == nullptr || finishing_ || planned_drop_) return;
    s = stream_;
    ctx_->timeline->Dropped(round_ != 0 ? round_ : theta_round_);
    spdlog::debug("{}: dropping the stream {} (round {})", id_, where, round_);
    resume_read = PlanDrop();
  }
  CancelHeld(s, resume_read);
}

void SimWorker::Resume(uint64_t generation) {
  Stream* s = nullptr;
  bool read = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (generation != generation_ || stream_ == nullptr || !paused_) return;
    paused_ = false;
    read = read_parked_;
    read_parked_ = false;
    s = stream_;
    s->AddHold();
  }
  if (read) s->StartRead(&s->read_buffer);
  s->RemoveHold();
  Pump();
}

void SimWorker::Heartbeat(uint64_t generation) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (generation != generation_ || stream_ == nullptr || finishing_) return;
    // A write in flight (a Δ chunk) already shows the shepherd this worker is alive.
    if (!paused_ && queue_.empty() && !writing_) {
      v1::WorkerMessage hb;
      v1::WorkerHeartbeat* h = hb.mutable_heartbeat();
      h->mutable_heartbeat()->set_sequence(++heartbeat_seq_);
      h->mutable_heartbeat()->set_sent_unix_ms(
          std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
              .count());
      h->set_phase(round_ != 0 ? v1::WORKER_PHASE_TRAINING : v1::WORKER_PHASE_READY);
      h->set_round(round_);
      Enqueue(hb, Kind::kHeartbeat);
    }
    ctx_->timers->After(std::chrono::milliseconds(heartbeat_ms_), [this, generation] { Heartbeat(generation); });
  }
  Pump();
}

void SimWorker::ComputeDone(uint64_t generation, uint64_t round) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (generation != generation_ || stream_ == nullptr || round != round_ || !assignment_) return;
    if (streaming()) {
      // The next queued round starts now; this one's Δ goes out while it computes.
      computing_ = false;
      compute_end_ = Clock::now();
    }
    const SyntheticDelta* delta = DeltaFor(round);
    if (cancelled_round_ == round || delta == nullptr) {
      if (streaming()) BeginNextRound();
      return;
    }
    const v1::Hyperparameters& h = assignment_->hyperparameters();
    const uint64_t tokens = static_cast<uint64_t>(steps_) * h.batch_size() * h.block_size();
    // The header first, as a worker sends it: the shepherd judges the Δ on it (and, with
    // streaming aggregation, sums the chunks as they come).
    v1::WorkerMessage head;
    v1::ResultHeader* header = head.mutable_result_header();
    header->set_round(round);
    header->set_steps(steps_);
    header->set_tokens_processed(tokens);
    header->set_delta_norm(delta->decoded_norm());
    Enqueue(head, Kind::kDelta, round);
    for (grpc::ByteBuffer& b : delta->Messages(round)) {
      const int64_t n = static_cast<int64_t>(b.Length());
      queue_.push_back(Item{std::move(b), Kind::kDelta, round, n});
    }
    v1::WorkerMessage m;
    v1::RoundResult* r = m.mutable_round_result();
    r->set_round(round);
    r->set_steps(steps_);
    r->set_tokens_processed(tokens);
    r->set_mean_loss(3.0f);
    r->set_last_loss(3.0f);
    const double compute_ms = ctx_->options->compute_s * 1000.0;
    r->set_step_time_ms(steps_ > 0 ? compute_ms / steps_ : 0);
    r->set_tokens_per_second(compute_ms > 0 ? static_cast<double>(r->tokens_processed()) * 1000.0 / compute_ms : 0);
    r->set_sampler_cursor(cursor_ + steps_);
    r->set_network_wait_ms(network_wait_ms_);
    Enqueue(m, Kind::kResult, round);
    send_start_ = Clock::now();
    send_bytes_ = 0;
    delta_chunks_sent_ = 0;
    if (streaming()) BeginNextRound();
  }
  Pump();
}

// Under mu_.
bool SimWorker::Handle(const v1::ShepherdMessage& m, int64_t payload_bytes) {
  const auto now = Clock::now();
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  switch (m.kind_case()) {
    case v1::ShepherdMessage::kJoinAck: {
      const v1::JoinAck& ack = m.join_ack();
      if (ack.has_rejection()) {
        ctx_->Fail(absl::Status(static_cast<absl::StatusCode>(ack.rejection().code()),
                                absl::StrCat(id_, ": Join refused: ", ack.rejection().message())));
        return false;  // the shepherd ends the stream
      }
      heartbeat_ms_ = std::max<uint32_t>(ack.heartbeat_interval_ms(), 10);
      chunk_bytes_ = ChunkBytesForPeer(ack.max_chunk_bytes());
      const uint64_t gen = generation_;
      ctx_->timers->After(std::chrono::milliseconds(heartbeat_ms_), [this, gen] { Heartbeat(gen); });
      return false;
    }
    case v1::ShepherdMessage::kAssignment: OnAssignment(m.assignment()); return false;
    case v1::ShepherdMessage::kProgramChunk:
      if (EndsBlob(m.program_chunk())) program_done_ = true;
      MaybeReady();
      return false;
    case v1::ShepherdMessage::kShardChunk:
      if (EndsBlob(m.shard_chunk())) shard_done_ = true;
      MaybeReady();
      return false;
    case v1::ShepherdMessage::kParameterChunk: {
      const v1::ParameterChunk& p = m.parameter_chunk();
      if (p.fragment() != 0 && !streaming()) {
        ctx_->Fail(absl::InvalidArgumentError(
            absl::StrCat(id_, ": a fragment of θ for round ", p.round(), ", but the assignment is not streaming")));
        return true;
      }
      if (p.round() != theta_round_ || p.fragment() != theta_fragment_) {
        theta_round_ = p.round();
        theta_fragment_ = p.fragment();
        theta_bytes_ = 0;
        // (A fragment's size as f32: θ's share, near enough for a drop point.)
        theta_bytes_expected_ = p.fragment() == 0 ? theta_bytes_full_ : theta_bytes_full_ / plan_->fragments();
        ctx_->timeline->ThetaArrived(p.round(), now);
        drop_at_ = DropAt::kNone;
        if (ctx_->options->drop_rate > 0 && unit(rng_) < ctx_->options->drop_rate) {
          const int phase = static_cast<int>(unit(rng_) * 3);
          drop_at_ = phase == 0 ? DropAt::kTheta : phase == 1 ? DropAt::kCompute : DropAt::kSending;
          drop_fraction_ = 0.05 + 0.9 * unit(rng_);
        }
      }
      theta_bytes_ += payload_bytes;
      // θ is complete with the last chunk of its last tensor (the data is in the payload when
      // parsed without copying, else in the message).
      const v1::TensorChunk& c = p.chunk();
      const bool complete = c.index() + 1 == c.count() &&
                            c.offset() + static_cast<uint64_t>(payload_bytes) + c.data().size() >= c.total_bytes();
      if (complete) theta_complete_round_ = p.round();
      if (drop_at_ == DropAt::kTheta &&
          static_cast<double>(theta_bytes_) >= drop_fraction_ * static_cast<double>(theta_bytes_expected_)) {
        drop_at_ = DropAt::kNone;
        ctx_->timeline->Dropped(p.round());
        return true;
      }
      return complete && streaming() && OnStreamingTheta(p);
    }
    case v1::ShepherdMessage::kStartRound: {
      const v1::StartRound& start = m.start_round();
      if (!assignment_ || !ready_sent_) {
        ctx_->Fail(absl::FailedPreconditionError(
            absl::StrCat(id_, ": StartRound ", start.round(), " before the assignment was ready")));
        return true;
      }
      if (streaming()) return OnStreamingStart(start);
      if (start.theta_from_init() && assignment_->has_init() && theta_complete_round_ != start.round()) {
        // θ₀, which a worker draws from the assignment's recipe: nothing came before.
        theta_complete_round_ = start.round();
        ctx_->timeline->ThetaArrived(start.round(), now);
      }
      // What the worker checks too: θ came in full first, one learning rate per inner step.
      if (theta_complete_round_ != start.round()) {
        ctx_->Fail(absl::FailedPreconditionError(
            absl::StrCat(id_, ": StartRound ", start.round(), " before its θ was complete")));
        return true;
      }
      if (start.learning_rates_size() != static_cast<int>(assignment_->hyperparameters().inner_steps())) {
        ctx_->Fail(absl::InvalidArgumentError(
            absl::StrCat(id_, ": StartRound ", start.round(), ": ", start.learning_rates_size(), " learning rates for ",
                         assignment_->hyperparameters().inner_steps(), " inner steps")));
        return true;
      }
      if (drop_at_ == DropAt::kTheta) {  // θ (an update) was smaller than the drop point
        drop_at_ = DropAt::kNone;
        ctx_->timeline->Dropped(start.round());
        return true;
      }
      round_ = start.round();
      steps_ = static_cast<uint32_t>(start.learning_rates_size());
      cursor_ = start.sampler_cursor();
      network_wait_ms_ =
          last_delta_sent_ ? std::chrono::duration<double, std::milli>(now - *last_delta_sent_).count() : 0;
      const uint64_t gen = generation_, r = round_;
      auto compute =
          std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(ctx_->options->compute_s));
      if (behaviour_.stall_rounds.count(r) != 0) {
        // Stalled: nothing is read or sent (heartbeats neither) for stall_s, then it computes.
        paused_ = true;
        const auto stall =
            std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(ctx_->options->stall_s));
        ctx_->timers->After(stall, [this, gen] { Resume(gen); });
        compute += stall;
      }
      if (drop_at_ == DropAt::kCompute) {
        drop_at_ = DropAt::kNone;
        const auto at = std::chrono::duration_cast<Clock::duration>(compute * drop_fraction_);
        ctx_->timers->After(at, [this, gen] { Drop(gen, "while computing"); });
      }
      ctx_->timers->After(compute, [this, gen, r] { ComputeDone(gen, r); });
      return false;
    }
    case v1::ShepherdMessage::kCancel:
      if (m.cancel().round() == 0) {
        ClearRound(round_);
        ResetStreaming();
        assignment_.reset();
        ++assignment_epoch_;
        ready_sent_ = false;
      } else {
        ClearRound(m.cancel().round());
      }
      return false;
    case v1::ShepherdMessage::kError:
      spdlog::warn("{}: the shepherd reports an error (code {}, round {}): {}", id_, m.error().code(),
                   m.error().round(), m.error().message());
      return false;
    case v1::ShepherdMessage::kHeartbeat: return false;
    case v1::ShepherdMessage::KIND_NOT_SET: break;
  }
  ctx_->Fail(absl::InvalidArgumentError(absl::StrCat(id_, ": a ShepherdMessage with no message set")));
  return true;
}

// Under mu_: a cancelled round sends nothing more (the chunk in flight, if any, completes).
void SimWorker::ClearRound(uint64_t round) {
  cancelled_round_ = round;
  std::deque<Item> keep;
  for (size_t i = 0; i < queue_.size(); ++i) {
    Item& it = queue_[i];
    const bool in_flight = i == 0 && writing_;
    if (in_flight || !((it.kind == Kind::kDelta || it.kind == Kind::kResult) && it.round == round)) {
      keep.push_back(std::move(it));
    }
  }
  queue_ = std::move(keep);
}

// Under mu_.
void SimWorker::OnAssignment(const v1::Assignment& a) {
  absl::StatusOr<codec::Codec> up = CodecFromProto(a.compression().up());
  if (!up.ok()) {
    ctx_->Fail(absl::InvalidArgumentError(absl::StrCat("Assignment.compression.up: ", up.status().message())));
    return;
  }
  std::vector<TensorSpec> specs;
  int64_t elements = 0;
  for (const v1::TensorSpec& s : a.parameters()) {
    absl::StatusOr<TensorSpec> spec = TensorSpecFromProto(s);
    if (!spec.ok()) {
      ctx_->Fail(absl::InvalidArgumentError(absl::StrCat("Assignment.parameters: ", spec.status().message())));
      return;
    }
    elements += NumElements(spec->shape);
    specs.push_back(*std::move(spec));
  }
  assignment_ = a;
  const uint64_t epoch = ++assignment_epoch_;
  program_done_ = !a.program_follows();
  shard_done_ = !a.shard().has_inline_tokens();
  ready_sent_ = false;
  deltas_.clear();
  ResetStreaming();
  theta_bytes_full_ = elements * 4;
  ctx_->NoteAssignment(a.job_id(), elements);
  const std::string key = absl::StrCat(a.job_id(), "/", a.program_hash(), "/", codec::CodecName(*up));
  if (a.streaming().fragments() > 1) {
    PlanFragments(a, specs, *up, key, epoch);
    return;
  }
  deltas_.resize(1);
  // Made once for all workers, on the source's thread.
  auto done = [this, epoch](const DeltaSource::Result& r) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (epoch != assignment_epoch_ || !assignment_) return;
      if (!r.ok()) {
        ctx_->Fail(r.status());
        return;
      }
      deltas_[0] = *r;
      MaybeReady();
    }
    Pump();
  };
  ctx_->deltas->Request(key, std::move(specs), *up, chunk_bytes_, [this, done](const DeltaSource::Result& r) {
    // Never run under mu_: hop to the timer thread.
    ctx_->timers->After(std::chrono::milliseconds(0), [done, r] { done(r); });
  });
}

// Under mu_.
void SimWorker::MaybeReady() {
  if (!assignment_ || ready_sent_ || !program_done_ || !shard_done_ || !DeltasReady()) return;
  const v1::Assignment& a = *assignment_;
  v1::WorkerMessage m;
  v1::AssignmentReady* r = m.mutable_ready();
  r->set_job_id(a.job_id());
  r->set_program_hash(a.program_hash());
  r->set_compile_ms(0);
  const v1::DataShard& shard = a.shard();
  r->set_shard_tokens(shard.has_inline_tokens() ? shard.inline_tokens().num_tokens()
                                                : shard.shared_file().end_token() - shard.shared_file().begin_token());
  Enqueue(m, Kind::kControl);
  ready_sent_ = true;
}

}  // namespace pcp::loadgen

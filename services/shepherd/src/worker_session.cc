#include "worker_session.h"

#include <algorithm>
#include <chrono>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "auth_refusals.h"
#include "pcp/base/absl_fmt.h"
#include "pcp/base/status_macros.h"
#include "pcp/base/unix_time.h"
#include "pcp/metrics/codec_seconds.h"
#include "pcp/rpc/tensor_proto.h"
#include "screen.h"
#include "shepherd_metrics.h"
#include "spdlog/spdlog.h"

namespace pcp::shepherd {
namespace {

// 1–128 characters of [A-Za-z0-9._:-] (training.proto, Join.supervisor_id).
absl::Status CheckSupervisorId(const std::string& id) {
  if (id.empty() || id.size() > 128) {
    return absl::InvalidArgumentError(absl::StrCat("Join.supervisor_id must be 1-128 characters, got ", id.size()));
  }
  for (char c : id) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
                    c == '_' || c == ':' || c == '-';
    if (!ok) {
      return absl::InvalidArgumentError(
          absl::StrCat("Join.supervisor_id '", id, "' has a character outside [A-Za-z0-9._:-]"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

WorkerSession::WorkerSession(std::string session_id, std::string peer, SessionOptions options,
                             SessionObserver* observer, WorkerEventSink* events, auth::Principal caller)
    : session_id_(std::move(session_id)),
      peer_(std::move(peer)),
      options_(std::move(options)),
      caller_(std::move(caller)),
      observer_(observer),
      events_(events),
      last_receive_(std::chrono::steady_clock::now()) {}

void WorkerSession::PostEvent(WorkerEventBody body) {
  if (events_ != nullptr) events_->Post(WorkerEvent{shared_from_this(), std::move(body)});
}

void WorkerSession::AttachTransport(SessionTransport* transport) {
  std::lock_guard<std::mutex> lock(mu_);
  transport_ = transport;
}

bool WorkerSession::ended() const {
  std::lock_guard<std::mutex> lock(mu_);
  return finish_status_.has_value();
}

bool WorkerSession::reading() const {
  std::lock_guard<std::mutex> lock(mu_);
  return !finish_status_.has_value();
}

double WorkerSession::seconds_since_receive() const {
  std::lock_guard<std::mutex> lock(mu_);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - last_receive_).count();
}

bool WorkerSession::HasProgram(const std::string& hash) const {
  std::lock_guard<std::mutex> lock(mu_);
  return programs_.count(hash) > 0;
}

void WorkerSession::NotePendingProgram(const std::string& hash) {
  std::lock_guard<std::mutex> lock(mu_);
  programs_.insert(hash);
}

// ------------------------------------------------------------------------------ inbound

void WorkerSession::OnRead(const v1::WorkerMessage& message, DataPieces payload) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    last_receive_ = std::chrono::steady_clock::now();
    if (finish_status_.has_value()) return;
  }
  absl::Status status = Handle(message, payload);
  if (!status.ok()) {
    spdlog::warn("worker session {} ({}): {}", session_id_, joined_ ? supervisor_id() : peer_, status.message());
    Close(status);
  }
}

absl::Status WorkerSession::Handle(const v1::WorkerMessage& message, DataPieces payload) {
  if (!joined_) {
    if (message.kind_case() != v1::WorkerMessage::kJoin) {
      return absl::FailedPreconditionError("the first message of Training.Connect must be a Join");
    }
    return HandleJoin(message.join());
  }
  auto self = shared_from_this();
  switch (message.kind_case()) {
    case v1::WorkerMessage::kJoin: return absl::FailedPreconditionError("Join sent twice on one stream");
    case v1::WorkerMessage::kHeartbeat: observer_->OnHeartbeat(self, message.heartbeat()); return absl::OkStatus();
    case v1::WorkerMessage::kReady: PostEvent(WorkerReady{message.ready()}); return absl::OkStatus();
    case v1::WorkerMessage::kResultHeader: return HandleResultHeader(message.result_header());
    case v1::WorkerMessage::kResultChunk: return HandleResultChunk(message.result_chunk(), payload);
    case v1::WorkerMessage::kRoundResult: return HandleRoundResult(message.round_result());
    case v1::WorkerMessage::kError: {
      spdlog::warn("worker {} reports an error (code {}, round {}): {}", supervisor_id(), message.error().code(),
                   message.error().round(), message.error().message());
      PostEvent(WorkerError{message.error()});
      bool abandon = false;
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (message.error().round() != 0 && message.error().round() == expected_round_) {
          abandoned_round_ = expected_round_;
          ClearResultLocked();
          abandon = true;
        }
      }
      if (abandon) PostEvent(WorkerResult{.round = message.error().round()});
      return absl::OkStatus();
    }
    case v1::WorkerMessage::kResync: PostEvent(WorkerResync{message.resync()}); return absl::OkStatus();
    case v1::WorkerMessage::KIND_NOT_SET: break;
  }
  return absl::InvalidArgumentError("WorkerMessage with no message set (unknown kind?)");
}

absl::Status WorkerSession::HandleJoin(const v1::Join& join) {
  if (join.protocol_version() != v1::PROTOCOL_VERSION_1) {
    return absl::FailedPreconditionError(
        absl::StrCat("Join.protocol_version ", join.protocol_version(), " is not supported (this shepherd speaks 1)"));
  }
  PCP_RETURN_IF_ERROR(CheckSupervisorId(join.supervisor_id()));
  if (join.backend() != v1::BACKEND_CPU && join.backend() != v1::BACKEND_VULKAN) {
    return absl::InvalidArgumentError("Join.backend must be BACKEND_CPU or BACKEND_VULKAN");
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    join_ = join;
    for (const std::string& h : join.cached_program_hashes()) programs_.insert(h);
  }
  // A node credential joins only under its own supervisor id: checked before admission, so
  // a refused Join never takes or displaces another node's slot.
  absl::Status accepted = auth::CheckNodeIdentity(caller_, join.supervisor_id());
  if (accepted.ok()) {
    accepted = observer_->AdmitJoin(shared_from_this());
  } else {
    CountAuthRefusal("Training", auth::kReasonNodeMismatch);
  }
  v1::ShepherdMessage ack;
  v1::JoinAck* a = ack.mutable_join_ack();
  if (!accepted.ok()) {
    *a->mutable_rejection() = ErrorToProto(accepted);
    Send(std::move(ack));
    return accepted;  // the caller closes the stream with it, after the JoinAck
  }
  a->set_session_id(session_id_);
  a->set_heartbeat_interval_ms(options_.heartbeat_interval_ms);
  a->set_heartbeat_timeout_ms(options_.heartbeat_timeout_ms);
  a->set_shepherd_version(options_.shepherd_version);
  a->set_max_chunk_bytes(static_cast<uint32_t>(options_.max_chunk_bytes));
  Send(std::move(ack));
  // From here on heartbeats may go out (after the JoinAck) and the end is reported.
  joined_ = true;
  bool closed_meanwhile = false;
  absl::Status why;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (finish_status_.has_value()) {
      closed_meanwhile = true;
      why = *finish_status_;
    }
  }
  if (closed_meanwhile) {
    NotifyEnded(why);
  } else {
    observer_->OnJoined(shared_from_this());
  }
  return absl::OkStatus();
}

absl::Status WorkerSession::HandleResultChunk(const v1::ResultChunk& chunk, DataPieces payload) {
  std::lock_guard<std::mutex> lock(mu_);
  if (chunk.round() != 0 && chunk.round() == abandoned_round_) return absl::OkStatus();  // late, dropped
  if (expected_round_ == 0 || chunk.round() != expected_round_ || !assembler_.has_value()) {
    return absl::InvalidArgumentError(
        absl::StrCat("result chunk for round ", chunk.round(),
                     expected_round_ == 0 ? std::string(", but no round is running on this worker")
                                          : absl::StrCat(", but the worker is on round ", expected_round_)));
  }
  if (sum_ != nullptr && !header_.has_value()) {
    return absl::InvalidArgumentError(
        absl::StrCat("result chunk for round ", chunk.round(), " before its ResultHeader"));
  }
  const double decoding_before = assembler_->codec_seconds();
  absl::Status s = payload.empty() ? assembler_->Add(chunk.chunk()) : assembler_->AddPieces(chunk.chunk(), payload);
  if (!s.ok()) return Annotate(s, absl::StrCat("result for round ", chunk.round()));
  // Accepted, so its codec is the job's (the assembler checked it).
  if (absl::StatusOr<codec::Codec> c = CodecFromProto(chunk.chunk().codec()); c.ok()) {
    metrics::CountCodecSeconds(metrics::kShepherdCodecSecondsTotal, *c, metrics::CodecOp::kDecode,
                               assembler_->codec_seconds() - decoding_before);
  }
  return absl::OkStatus();
}

absl::Status WorkerSession::HandleResultHeader(const v1::ResultHeader& header) {
  std::lock_guard<std::mutex> lock(mu_);
  if (header.round() != 0 && header.round() == abandoned_round_) return absl::OkStatus();  // late, dropped
  if (expected_round_ == 0 || header.round() != expected_round_ || !assembler_.has_value()) {
    return absl::InvalidArgumentError(
        absl::StrCat("ResultHeader for round ", header.round(), ", but the worker is on round ", expected_round_));
  }
  if (header_.has_value() || assembler_->tensors_received() > 0 || assembler_->count() > 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("ResultHeader for round ", header.round(), " after its result had begun"));
  }
  if (header.delta_norm() < 0) {  // (NaN, like +inf, declares a Δ that is not finite: refused below)
    return absl::InvalidArgumentError(absl::StrCat("ResultHeader for round ", header.round(),
                                                   ": delta_norm must be >= 0 (+inf for a Δ that is not finite), got ",
                                                   header.delta_norm()));
  }
  header_ = header;
  if (sum_ == nullptr) return absl::OkStatus();
  if (sum_->steps != 0 && (header.steps() != sum_->steps || header.tokens_processed() != sum_->tokens)) {
    return absl::InvalidArgumentError(absl::StrCat("ResultHeader for round ", header.round(), ": expected steps ",
                                                   sum_->steps, ", tokens_processed ", sum_->tokens, "; got ",
                                                   header.steps(), ", ", header.tokens_processed()));
  }
  // Judged before any chunk: a rejected Δ's chunks are checked and dropped, a clipped one's
  // scaled as they are added.
  verdict_ = Screen(sum_->screen, sum_->threshold,
                    DeltaNorm::Declared(sum_->screen.JudgedNorm(header.delta_norm(), header.steps())));
  if (Admitted(*verdict_)) {
    contribution_ = sum_->sum.Begin(supervisor_id(), static_cast<double>(header.tokens_processed()), verdict_->scale,
                                    header.delta_norm());
  }
  assembler_->StreamTo([this](uint32_t tensor, int64_t offset, const F32Pieces& values, double sum_of_squares) {
    return contribution_ == nullptr ? absl::OkStatus() : contribution_->Add(tensor, offset, values, sum_of_squares);
  });
  return absl::OkStatus();
}

absl::Status WorkerSession::HandleRoundResult(const v1::RoundResult& result) {
  ReceivedDelta delta;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (result.round() != 0 && result.round() == abandoned_round_) return absl::OkStatus();
    if (expected_round_ == 0 || result.round() != expected_round_ || !assembler_.has_value()) {
      return absl::InvalidArgumentError(
          absl::StrCat("RoundResult for round ", result.round(), ", but the worker is on round ", expected_round_));
    }
    if (assembler_->complete()) {
      absl::StatusOr<std::vector<NamedTensor>> taken = assembler_->Take();
      if (!taken.ok()) return taken.status();
      if (sum_ == nullptr) {
        for (NamedTensor& t : *taken) delta.tensors.push_back(std::move(t.tensor));
      }
    } else if (assembler_->tensors_received() > 0 || assembler_->count() > 0) {
      return absl::InvalidArgumentError(absl::StrCat("RoundResult for round ", result.round(),
                                                     " before its delta was complete (", assembler_->tensors_received(),
                                                     " of ", assembler_->count(), " tensors received)"));
    } else if (sum_ != nullptr && header_.has_value()) {
      return absl::InvalidArgumentError(
          absl::StrCat("RoundResult for round ", result.round(), " without the Δ its header announced"));
    }
    if (header_.has_value() &&
        (header_->steps() != result.steps() || header_->tokens_processed() != result.tokens_processed())) {
      return absl::InvalidArgumentError(absl::StrCat("RoundResult for round ", result.round(), " says steps ",
                                                     result.steps(), ", tokens_processed ", result.tokens_processed(),
                                                     "; its header said ", header_->steps(), ", ",
                                                     header_->tokens_processed()));
    }
    if (sum_ != nullptr && header_.has_value()) delta.streamed = verdict_;
    abandoned_round_ = expected_round_;  // anything more for it is late
    ClearResultLocked();
  }
  PostEvent(WorkerResult{.round = result.round(), .delta = std::move(delta), .result = result});
  return absl::OkStatus();
}

void WorkerSession::ExpectResult(uint64_t round, std::vector<TensorSpec> specs, codec::Codec codec,
                                 std::shared_ptr<RoundSum> sum) {
  std::lock_guard<std::mutex> lock(mu_);
  ClearResultLocked();
  expected_round_ = round;
  // A rolled-back round is redone under the same number: this attempt's result is not late.
  // (Chunks of an earlier attempt abandoned mid-send would now be taken for this one; the
  // assembler refuses the mix and the session ends, and the worker rejoins.)
  if (abandoned_round_ == round) abandoned_round_ = 0;
  AssemblyLimits limits;
  limits.max_chunk_bytes = options_.max_chunk_bytes;
  assembler_.emplace(limits);
  assembler_->ExpectSpecs(std::move(specs));
  assembler_->ExpectCodec(codec, "the job's diloco.compression.up");
  sum_ = std::move(sum);
}

void WorkerSession::ClearResultLocked() {
  expected_round_ = 0;
  assembler_.reset();
  header_.reset();
  verdict_.reset();
  contribution_.reset();  // before the sum it points into
  sum_.reset();
}

void WorkerSession::AbandonRound(uint64_t round) {
  std::lock_guard<std::mutex> lock(mu_);
  abandoned_round_ = round;
  if (expected_round_ == round) ClearResultLocked();
}

void WorkerSession::OnReadsDone() {
  Close(joined_ ? absl::OkStatus() : absl::CancelledError("the stream ended before a Join"));
}

void WorkerSession::OnCancelled() { Close(absl::CancelledError("the stream was cancelled (peer gone)")); }

// ------------------------------------------------------------------------------ outbound

void WorkerSession::Enqueue(Item item) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (finish_status_.has_value()) return;
    outbox_.push_back(std::move(item));
  }
  Pump();
}

void WorkerSession::Send(v1::ShepherdMessage message) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (finish_status_.has_value()) return;
    outbox_.push_back(std::move(message));
  }
  Pump();
}

void WorkerSession::SendParameters(uint64_t round, std::shared_ptr<const ChunkedList> theta,
                                   uint64_t update_from_round) {
  v1::ParameterChunk head;
  head.set_round(round);
  head.set_update_from_round(update_from_round);
  SendParameters(head, std::move(theta));
}

void WorkerSession::SendParameters(const v1::ParameterChunk& head, std::shared_ptr<const ChunkedList> theta) {
  Enqueue(TensorStream{head, std::move(theta)});
}

void WorkerSession::SendBlob(bool program, std::string name, std::shared_ptr<const std::string> data) {
  ChunkOptions options{.chunk_bytes = options_.chunk_bytes};
  absl::StatusOr<BlobChunker> chunker = BlobChunker::Create(std::move(name), *data, options);
  if (!chunker.ok()) {
    spdlog::error("session {}: cannot chunk a blob: {}", session_id_, chunker.status().message());
    return;
  }
  Enqueue(BlobStream{program, std::move(data), *std::move(chunker)});
}

void WorkerSession::SendHeartbeat() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (finish_status_.has_value() || !joined_) return;
    heartbeat_due_ = true;
  }
  Pump();
}

bool WorkerSession::NextMessageLocked() {
  current_.Clear();
  current_payload_.reset();
  if (heartbeat_due_) {
    heartbeat_due_ = false;
    v1::Heartbeat* hb = current_.mutable_heartbeat();
    hb->set_sequence(++heartbeat_seq_);
    hb->set_sent_unix_ms(NowUnixMs());
    return true;
  }
  while (!outbox_.empty()) {
    Item& item = outbox_.front();
    if (auto* msg = std::get_if<v1::ShepherdMessage>(&item)) {
      current_ = std::move(*msg);
      outbox_.pop_front();
      return true;
    }
    if (auto* ts = std::get_if<TensorStream>(&item)) {
      if (ts->next >= ts->list->size()) {
        outbox_.pop_front();
        continue;
      }
      v1::ParameterChunk* p = current_.mutable_parameter_chunk();
      *p = ts->head;
      *p->mutable_chunk() = ts->list->chunk(ts->next);  // its data stays in the list: current_payload_
      current_payload_ = ts->list->payload(ts->next);
      if (++ts->next >= ts->list->size()) outbox_.pop_front();
      return true;
    }
    auto& bs = std::get<BlobStream>(item);
    if (bs.chunker.done()) {
      outbox_.pop_front();
      continue;
    }
    bs.chunker.Next(bs.program ? current_.mutable_program_chunk() : current_.mutable_shard_chunk());
    if (bs.chunker.done()) outbox_.pop_front();
    return true;
  }
  return false;
}

void WorkerSession::Pump() {
  SessionTransport* transport = nullptr;
  bool write = false;
  absl::Status finish;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (transport_ == nullptr || write_in_flight_ || finish_started_) return;
    // While closing, only what was queued before Close (a rejection) still goes out.
    if (!write_broken_ && NextMessageLocked()) {
      write_in_flight_ = true;
      write = true;
    } else if (finish_status_.has_value()) {
      finish_started_ = true;
      finish = *finish_status_;
    } else {
      return;
    }
    transport = transport_;
  }
  if (write) {
    transport->StartWrite(&current_, current_payload_.has_value() ? &*current_payload_ : nullptr);
  } else {
    transport->Finish(finish);
  }
}

void WorkerSession::OnWriteDone(bool ok) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    write_in_flight_ = false;
    // A chunk of θ, a program or a shard taken off our hands: the worker is reading (see Tick).
    if (ok && (current_.has_parameter_chunk() || current_.has_program_chunk() || current_.has_shard_chunk())) {
      last_chunk_taken_ = std::chrono::steady_clock::now();
    }
    if (!ok) {
      write_broken_ = true;
      outbox_.clear();
    }
  }
  if (!ok) Close(absl::UnavailableError("writing to the worker failed (stream broken)"));
  Pump();
}

void WorkerSession::Close(const absl::Status& status, bool peer_dead) {
  bool cancel = false;
  SessionTransport* transport = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (finish_status_.has_value()) return;
    finish_status_ = status;
    close_time_ = std::chrono::steady_clock::now();
    // Queued work is dropped, except a rejection JoinAck (queued before a failed join's Close).
    if (joined_) outbox_.clear();
    heartbeat_due_ = false;
    cancel = peer_dead && write_in_flight_ && transport_ != nullptr;
    transport = transport_;
  }
  if (cancel) transport->Cancel();
  NotifyEnded(status);
  Pump();
}

bool WorkerSession::Tick(double timeout_s) {
  bool close_dead = false, cancel = false;
  SessionTransport* transport = nullptr;
  double silent = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (transport_gone_) return true;
    const auto now = std::chrono::steady_clock::now();
    // Silence is no message from the worker and no chunk of ours taken: a worker busy
    // receiving θ may have its heartbeats delayed (behind θ on a saturated shepherd's
    // threads, say), but the θ it reads shows it alive. A stopped worker
    // still takes chunks until its HTTP/2 window and socket buffers fill (tens of MB), then
    // goes silent. Heartbeats we send do not count: a stopped peer's kernel takes them for hours.
    silent = std::chrono::duration<double>(now - std::max(last_receive_, last_chunk_taken_)).count();
    if (!finish_status_.has_value()) {
      close_dead = silent > timeout_s;
    } else if (!finish_started_ && write_in_flight_ && transport_ != nullptr &&
               std::chrono::duration<double>(now - close_time_).count() > timeout_s) {
      cancel = true;
      transport = transport_;
    }
  }
  if (close_dead) {
    Close(absl::UnavailableError(
              absl::StrFormat("no message from worker '%s', and no chunk taken, for %.1f s (heartbeat timeout %.1f s)",
                              joined_ ? supervisor_id() : peer_, silent, timeout_s)),
          /*peer_dead=*/true);
  }
  if (cancel) transport->Cancel();
  return false;
}

void WorkerSession::NotifyEnded(const absl::Status& why) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!joined_ || ended_notified_) return;
    ended_notified_ = true;
  }
  observer_->OnEnded(shared_from_this(), why);
}

void WorkerSession::OnTransportDone() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    transport_ = nullptr;
    transport_gone_ = true;
    if (!finish_status_.has_value()) finish_status_ = absl::CancelledError("stream gone");
  }
  NotifyEnded(absl::CancelledError("stream gone"));
}

}  // namespace pcp::shepherd

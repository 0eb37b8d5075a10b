#include "connection.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "pcp/base/absl_fmt.h"
#include "pcp/rpc/grpc_status.h"
#include "pcp/rpc/tensor_proto.h"
#include "spdlog/spdlog.h"
#include "worker_metrics.h"

namespace pcp::worker {
namespace {

int64_t NowUnixMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// The generated stub's method, driven with ByteBuffers (as the generated code itself does,
// through the same internal factory) so that chunk data need not pass through protobuf.
constexpr char kConnectMethod[] = "/pcp.v1.Training/Connect";

// The message's protobuf bytes (gRPC's own serializer, straight into its slices).
grpc::ByteBuffer ToByteBuffer(const v1::WorkerMessage& message) {
  grpc::ByteBuffer buffer;
  bool own = false;
  (void)grpc::SerializationTraits<v1::WorkerMessage>::Serialize(message, &buffer, &own);  // fails only past 2 GiB
  return buffer;
}

}  // namespace

Connection::Connection(std::shared_ptr<grpc::Channel> channel)
    : channel_(std::move(channel)),
      connect_method_(kConnectMethod, grpc::internal::RpcMethod::BIDI_STREAMING, channel_) {}

Connection::~Connection() { Close(std::chrono::milliseconds(0)).IgnoreError(); }

absl::Status Connection::Open(const v1::Join& join, std::chrono::milliseconds timeout) {
  // No deadline on the stream itself: it lives as long as the worker. Liveness is checked by
  // heartbeats both ways instead (HeartbeatLoop), and the Join has its own timeout below.
  last_receive_ = std::chrono::steady_clock::now();
  // Wait for the channel to (re)connect instead of failing at once while gRPC's own
  // reconnect backoff runs; `timeout` bounds the wait (the context is cancelled below).
  context_.set_wait_for_ready(true);
  stream_.reset(grpc::internal::ClientReaderWriterFactory<grpc::ByteBuffer, grpc::ByteBuffer>::Create(channel_.get(),
                                                                                                      connect_method_,
                                                                                                      &context_));
  reader_ = std::thread([this] { ReadLoop(); });
  v1::WorkerMessage hello;
  *hello.mutable_join() = join;
  if (!Write(hello)) {
    Close(std::chrono::milliseconds(0)).IgnoreError();
    return absl::UnavailableError(absl::StrCat("cannot send Join: ", status().message()));
  }
  Incoming first;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    const Pop pop = Next(&first, std::max(left, std::chrono::milliseconds(0)));
    if (pop == Pop::kMessage) break;
    if (pop == Pop::kEnded) {
      absl::Status s = status();
      return s.ok() ? absl::UnavailableError("the shepherd ended the stream before a JoinAck") : s;
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      context_.TryCancel();
      Close(std::chrono::milliseconds(0)).IgnoreError();
      return absl::UnavailableError(absl::StrCat("no JoinAck within ", timeout.count(), " ms"));
    }
  }
  if (!first.message.has_join_ack()) {
    context_.TryCancel();
    Close(std::chrono::milliseconds(0)).IgnoreError();
    return absl::FailedPreconditionError("the shepherd's first message is not a JoinAck");
  }
  ack_ = first.message.join_ack();
  if (ack_.has_rejection()) {
    absl::Status rejected = ErrorFromProto(ack_.rejection());
    Close(std::chrono::milliseconds(1000)).IgnoreError();
    return rejected;
  }
  heartbeat_ = std::thread([this] { HeartbeatLoop(); });
  return absl::OkStatus();
}

void Connection::ReadLoop() {
  grpc::ByteBuffer buffer;
  ChunkMessageParser parser;
  absl::Status malformed;
  while (stream_->Read(&buffer)) {
    Incoming in;
    if (absl::Status parsed = parser.Parse(&buffer, kParameterChunkDataPath, &in.message); !parsed.ok()) {
      // The shepherd sent bytes that are not a ShepherdMessage: end the stream with that.
      spdlog::warn("from the shepherd: {}", parsed.ToString());
      if (malformed.ok()) malformed = parsed;
      context_.TryCancel();
      continue;
    }
    in.payload = parser.TakePayload();
    CountReceived(in.message, buffer.Length());
    {
      std::lock_guard<std::mutex> lock(mu_);
      last_receive_ = std::chrono::steady_clock::now();
    }
    if (in.message.has_heartbeat()) continue;
    if (peek_hook_) peek_hook_(in.message);
    {
      std::lock_guard<std::mutex> lock(mu_);
      inbox_.push_back(std::move(in));
    }
    cv_.notify_all();
  }
  grpc::Status status = stream_->Finish();
  {
    std::lock_guard<std::mutex> lock(mu_);
    status_ = malformed.ok() ? FromGrpcStatus(status) : malformed;
    ended_ = true;
  }
  cv_.notify_all();
}

void Connection::HeartbeatLoop() {
  const auto interval = std::chrono::milliseconds(std::max<uint32_t>(ack_.heartbeat_interval_ms(), 10));
  const double timeout_s = std::max<uint32_t>(ack_.heartbeat_timeout_ms(), 2 * ack_.heartbeat_interval_ms()) / 1000.0;
  uint64_t sequence = 0;
  std::unique_lock<std::mutex> lock(mu_);
  while (!closing_ && !ended_) {
    cv_.wait_for(lock, interval, [this] { return closing_ || ended_.load(); });
    if (closing_ || ended_) break;
    const double silent = std::chrono::duration<double>(std::chrono::steady_clock::now() - last_receive_).count();
    lock.unlock();
    if (silent > timeout_s) {
      spdlog::warn("no message from the shepherd for {:.1f} s (heartbeat timeout {:.1f} s): dropping the stream",
                   silent, timeout_s);
      context_.TryCancel();
      lock.lock();
      break;
    }
    v1::WorkerMessage hb;
    v1::WorkerHeartbeat* h = hb.mutable_heartbeat();
    h->mutable_heartbeat()->set_sequence(++sequence);
    h->mutable_heartbeat()->set_sent_unix_ms(NowUnixMs());
    h->set_phase(static_cast<v1::WorkerPhase>(phase_.load()));
    h->set_round(round_.load());
    h->set_steps_done(steps_done_.load());
    {
      // A big write in progress (Δ chunks) already tells the shepherd we are alive; never
      // queue behind it, so that the silence check above keeps running.
      std::unique_lock<std::mutex> write_lock(write_mu_, std::try_to_lock);
      if (write_lock.owns_lock() && !writes_done_ && !ended_) {
        const grpc::ByteBuffer buffer = ToByteBuffer(hb);
        CountSent(hb, buffer.Length());
        stream_->Write(buffer);
      }
    }
    lock.lock();
  }
}

Connection::Pop Connection::Next(Incoming* out, std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, timeout, [this] { return !inbox_.empty() || ended_.load() || interrupted_; });
  interrupted_ = false;
  if (!inbox_.empty()) {
    *out = std::move(inbox_.front());
    inbox_.pop_front();
    return Pop::kMessage;
  }
  return ended_ ? Pop::kEnded : Pop::kTimeout;
}

void Connection::Interrupt() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    interrupted_ = true;
  }
  cv_.notify_all();
}

void Connection::Abort() {
  context_.TryCancel();
  Interrupt();
}

bool Connection::Write(const v1::WorkerMessage& message) { return WriteBuffer(message, ToByteBuffer(message)); }

bool Connection::Write(const v1::WorkerMessage& head, const ChunkPayload& payload) {
  return WriteBuffer(head, SerializeWithPayload(head, kResultChunkDataPath, payload));
}

bool Connection::WriteBuffer(const v1::WorkerMessage& message, const grpc::ByteBuffer& buffer) {
  std::lock_guard<std::mutex> lock(write_mu_);
  if (writes_done_ || ended_ || stream_ == nullptr) return false;
  CountSent(message, buffer.Length());
  return stream_->Write(buffer);
}

absl::Status Connection::status() const {
  std::lock_guard<std::mutex> lock(mu_);
  return status_;
}

void Connection::SetPhase(v1::WorkerPhase phase, uint64_t round, uint32_t steps_done) {
  phase_ = phase;
  round_ = round;
  steps_done_ = steps_done;
}

absl::Status Connection::Close(std::chrono::milliseconds grace) {
  if (stream_ == nullptr) return absl::OkStatus();
  {
    std::lock_guard<std::mutex> lock(mu_);
    closing_ = true;
  }
  cv_.notify_all();
  {
    std::lock_guard<std::mutex> lock(write_mu_);
    if (!writes_done_ && !ended_) stream_->WritesDone();
    writes_done_ = true;
  }
  {
    std::unique_lock<std::mutex> lock(mu_);
    if (!cv_.wait_for(lock, grace, [this] { return ended_.load(); })) {
      lock.unlock();
      context_.TryCancel();
    }
  }
  if (reader_.joinable()) reader_.join();
  if (heartbeat_.joinable()) heartbeat_.join();
  return status();
}

bool Connection::Pump(const std::function<void(const v1::ShepherdMessage&, DataPieces)>& handle,
                      std::chrono::milliseconds timeout) {
  Incoming in;
  if (Next(&in, timeout) != Pop::kMessage) return false;
  handle(in.message, in.payload.pieces());
  return true;
}

}  // namespace pcp::worker

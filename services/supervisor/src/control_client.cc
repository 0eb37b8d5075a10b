#include "pcp/supervisor/control_client.h"

#include <grpcpp/grpcpp.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "pcp/auth/tls_failures.h"
#include "pcp/base/status_macros.h"
#include "pcp/metrics/registry.h"
#include "pcp/rpc/grpc_status.h"
#include "pcp/v1/control.grpc.pb.h"

#ifndef PCP_VERSION
#define PCP_VERSION "dev"
#endif

namespace pcp::supervisor {
namespace {

using Clock = std::chrono::steady_clock;
namespace v1 = ::pcp::v1;

v1::WorkerProcessState ToProto(WorkerState state) {
  switch (state) {
    case WorkerState::kRunning: return v1::WORKER_PROCESS_STATE_RUNNING;
    case WorkerState::kRestarting: return v1::WORKER_PROCESS_STATE_RESTARTING;
    case WorkerState::kBackoff: return v1::WORKER_PROCESS_STATE_BACKOFF;
    case WorkerState::kDraining: return v1::WORKER_PROCESS_STATE_DRAINING;
    case WorkerState::kStopped: return v1::WORKER_PROCESS_STATE_STOPPED;
  }
  return v1::WORKER_PROCESS_STATE_UNSPECIFIED;
}

v1::WorkerProcess ToProto(const WorkerStatus& s) {
  v1::WorkerProcess p;
  p.set_state(ToProto(s.state));
  p.set_pid(s.pid);
  p.set_incarnation(s.incarnation);
  p.set_restarts(s.restarts);
  if (s.exited_before) {
    p.set_last_exit_code(s.last_exit.exit_code);
    p.set_last_signal(s.last_exit.signal);
  }
  p.set_uptime_ms(static_cast<uint64_t>(absl::ToInt64Milliseconds(s.uptime)));
  p.set_backoff_ms(static_cast<uint64_t>(absl::ToInt64Milliseconds(s.backoff_left)));
  return p;
}

int64_t NowUnixMs() { return absl::ToUnixMillis(absl::Now()); }

std::string Text(const absl::Status& s) { return std::string(s.message()); }

// What the stream's threads and the ProcessManager's callbacks share. Held by shared_ptr:
// a command's acknowledgement may arrive after the stream (or the whole client) is gone.
struct Mailbox {
  std::mutex mu;
  std::condition_variable cv;
  bool stop = false;
  bool worker_changed = false;
  uint64_t session = 0;                                  // current stream, +1 per attempt
  std::deque<std::pair<uint64_t, v1::CommandAck>> acks;  // (session, ack)
  std::optional<std::string> shutdown;                   // a Shutdown command was carried out
  // Filled by the reader thread of the current stream.
  std::deque<v1::ControlCommand> incoming;
  bool stream_ended = false;
  Clock::time_point last_received;
  ControlClientStats stats;
};

}  // namespace

class ControlClient::Impl {
 public:
  Impl(ControlClientOptions options, ProcessManager* manager, std::function<void(std::string)> on_shutdown)
      : options_(std::move(options)),
        manager_(manager),
        on_shutdown_(std::move(on_shutdown)),
        box_(std::make_shared<Mailbox>()) {
    std::weak_ptr<Mailbox> weak = box_;
    manager_->SetChangeListener([weak] {
      if (auto box = weak.lock()) {
        std::lock_guard<std::mutex> lock(box->mu);
        box->worker_changed = true;
        box->cv.notify_all();
      }
    });
    thread_ = std::thread([this] { Run(); });
  }

  ~Impl() { Stop(); }

  void Stop() {
    {
      std::lock_guard<std::mutex> lock(box_->mu);
      box_->stop = true;
      box_->cv.notify_all();
    }
    {
      std::lock_guard<std::mutex> lock(ctx_mu_);
      stopping_ = true;
      if (active_ctx_ != nullptr) active_ctx_->TryCancel();
    }
    if (thread_.joinable() && thread_.get_id() != std::this_thread::get_id()) thread_.join();
  }

  ControlClientStats Stats() const {
    std::lock_guard<std::mutex> lock(box_->mu);
    return box_->stats;
  }

 private:
  void Run();
  // One stream from connect to end; `welcomed` tells whether the shepherd accepted it.
  absl::Status Session(bool* welcomed);
  // A channel to the shepherd, connected within options_.connect_timeout (in slices, so that
  // Stop() is not held up by a shepherd that is down).
  absl::StatusOr<std::shared_ptr<grpc::Channel>> Connect();
  // What one stream's loop keeps between wake-ups.
  struct StreamState {
    uint64_t session = 0;
    bool welcomed = false;
    std::chrono::milliseconds interval{2000};        // heartbeats, until the welcome says
    std::chrono::milliseconds silence_limit{10000};  // the shepherd's, likewise
    Clock::time_point welcome_deadline;
    Clock::time_point next_heartbeat;
    uint64_t sequence = 0;
  };
  // What the mailbox held when the loop woke (its acks only those of this stream).
  struct Wakeup {
    std::deque<v1::ControlCommand> incoming;
    std::deque<v1::CommandAck> acks;
    bool worker_changed = false, stop = false, ended = false, shutdown = false;
    Clock::time_point last_received;
  };
  // Waits until the next heartbeat, the silence limit (or, before the welcome, its deadline),
  // or something to do, and takes it out of the mailbox.
  Wakeup Wait(const StreamState& st);
  // A welcome: the stream is accepted (heartbeat settings taken), or the shepherd's refusal.
  absl::Status OnWelcome(const v1::SupervisorWelcome& w, StreamState* st);
  v1::SupervisorMessage Hello() const;
  v1::SupervisorMessage Heartbeat(StreamState* st) const;
  void HandleCommand(const v1::ControlCommand& command, uint64_t session);
  bool Stopping() {
    std::lock_guard<std::mutex> lock(box_->mu);
    return box_->stop;
  }

  const ControlClientOptions options_;
  ProcessManager* const manager_;
  const std::function<void(std::string)> on_shutdown_;
  const std::shared_ptr<Mailbox> box_;
  std::mutex ctx_mu_;
  bool stopping_ = false;
  grpc::ClientContext* active_ctx_ = nullptr;
  std::thread thread_;
};

void ControlClient::Impl::Run() {
  Backoff backoff(options_.reconnect);
  while (true) {
    bool welcomed = false;
    absl::Status status = Session(&welcomed);
    std::unique_lock<std::mutex> lock(box_->mu);
    box_->stats.connected = false;
    metrics::Get(metrics::kSupervisorConnected).Set(0);
    if (!status.ok()) {
      // A refused connection or TLS handshake, said precisely (gRPC says "Socket closed").
      const std::string why =
          auth::DescribeConnectFailure(status.message(), options_.credentials.tls.enabled(), options_.shepherd);
      box_->stats.last_error = why.empty() ? Text(status) : absl::StrCat(why, " (gRPC: ", status.message(), ")");
    }
    if (box_->shutdown || box_->stop) break;
    if (welcomed) backoff.Reset();
    const absl::Duration delay = backoff.Next();
    spdlog::warn("control stream to shepherd {}: {}; reconnecting in {}", options_.shepherd,
                 status.ok() ? "ended" : box_->stats.last_error, absl::FormatDuration(delay));
    box_->cv.wait_for(lock, absl::ToChronoNanoseconds(delay), [&] { return box_->stop || box_->shutdown.has_value(); });
    if (box_->shutdown || box_->stop) break;
  }
  std::optional<std::string> shutdown;
  {
    std::lock_guard<std::mutex> lock(box_->mu);
    shutdown = box_->shutdown;
  }
  if (shutdown && on_shutdown_) on_shutdown_(*shutdown);
}

void ControlClient::Impl::HandleCommand(const v1::ControlCommand& command, uint64_t session) {
  const uint64_t id = command.command_id();
  std::shared_ptr<Mailbox> box = box_;
  auto ack = [box, session, id](absl::Status status, std::string message) {
    if (id == 0) return;  // the shepherd expects no answer
    v1::CommandAck a;
    a.set_command_id(id);
    a.set_code(static_cast<int>(status.code()));
    a.set_message(status.ok() ? std::move(message) : Text(status));
    std::lock_guard<std::mutex> lock(box->mu);
    box->acks.emplace_back(session, std::move(a));
    box->cv.notify_all();
  };
  {
    std::lock_guard<std::mutex> lock(box->mu);
    ++box->stats.commands;
  }
  switch (command.kind_case()) {
    case v1::ControlCommand::kRestartWorker:
      spdlog::info("shepherd command {}: restart worker ({})", id, command.restart_worker().reason());
      manager_->Restart(absl::Milliseconds(command.restart_worker().grace_ms()), ack);
      return;
    case v1::ControlCommand::kDrainWorker:
      spdlog::info("shepherd command {}: drain worker ({})", id, command.drain_worker().reason());
      manager_->Drain(absl::Milliseconds(command.drain_worker().grace_ms()), ack);
      return;
    case v1::ControlCommand::kShutdown: {
      spdlog::info("shepherd command {}: shut down ({})", id, command.shutdown().reason());
      std::string reason = absl::StrCat("Shutdown command from the shepherd (", command.shutdown().reason(), ")");
      manager_->Drain(absl::Milliseconds(command.shutdown().grace_ms()), [ack, box, reason](absl::Status status,
                                                                                            std::string message) {
        ack(status, message.empty() ? "worker stopped; supervisor exiting" : message + "; supervisor exiting");
        std::lock_guard<std::mutex> lock(box->mu);
        box->shutdown = reason;
        box->cv.notify_all();
      });
      return;
    }
    default:
      ack(absl::InvalidArgumentError(
              absl::StrCat("unknown command (field ", static_cast<int>(command.kind_case()), ")")),
          "");
      return;
  }
}

absl::StatusOr<std::shared_ptr<grpc::Channel>> ControlClient::Impl::Connect() {
  grpc::ChannelArguments args;
  // A private subchannel pool: a new channel starts connecting at once instead of
  // inheriting gRPC's reconnect backoff from an earlier one.
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  PCP_ASSIGN_OR_RETURN(std::shared_ptr<grpc::Channel> channel,
                       auth::MakeChannel(options_.shepherd, options_.credentials, args));
  {
    std::lock_guard<std::mutex> lock(box_->mu);
    ++box_->stats.attempts;
  }
  const Clock::time_point connect_deadline = Clock::now() + absl::ToChronoNanoseconds(options_.connect_timeout);
  // gRPC deadlines are system_clock time points; slices keep a clock change harmless.
  auto slice = [&] {
    const auto left = std::max(Clock::duration::zero(), connect_deadline - Clock::now());
    return std::chrono::system_clock::now() + std::min<Clock::duration>(left, std::chrono::milliseconds(200));
  };
  while (!channel->WaitForConnected(slice())) {
    if (Stopping()) return absl::CancelledError("stopping");
    if (Clock::now() >= connect_deadline) {
      return absl::UnavailableError(absl::StrCat("cannot reach the shepherd at ", options_.shepherd, " within ",
                                                 absl::FormatDuration(options_.connect_timeout)));
    }
  }
  return channel;
}

v1::SupervisorMessage ControlClient::Impl::Hello() const {
  v1::SupervisorMessage hello;
  hello.mutable_hello()->set_protocol_version(v1::PROTOCOL_VERSION_1);
  hello.mutable_hello()->set_supervisor_id(options_.supervisor_id);
  hello.mutable_hello()->set_host(options_.host);
  hello.mutable_hello()->set_version(PCP_VERSION);
  *hello.mutable_hello()->mutable_worker() = ToProto(manager_->Status());
  return hello;
}

v1::SupervisorMessage ControlClient::Impl::Heartbeat(StreamState* st) const {
  v1::SupervisorMessage m;
  m.mutable_heartbeat()->mutable_heartbeat()->set_sequence(++st->sequence);
  m.mutable_heartbeat()->mutable_heartbeat()->set_sent_unix_ms(NowUnixMs());
  *m.mutable_heartbeat()->mutable_worker() = ToProto(manager_->Status());
  return m;
}

ControlClient::Impl::Wakeup ControlClient::Impl::Wait(const StreamState& st) {
  Wakeup w;
  std::unique_lock<std::mutex> lock(box_->mu);
  const Clock::time_point wake =
      st.welcomed ? std::min(st.next_heartbeat, box_->last_received + st.silence_limit) : st.welcome_deadline;
  box_->cv.wait_until(lock, wake, [&] {
    return box_->stop || box_->stream_ended || !box_->incoming.empty() || !box_->acks.empty() ||
           (st.welcomed && box_->worker_changed);
  });
  w.incoming.swap(box_->incoming);
  while (!box_->acks.empty()) {
    if (box_->acks.front().first == st.session) w.acks.push_back(box_->acks.front().second);
    box_->acks.pop_front();
  }
  w.worker_changed = st.welcomed && std::exchange(box_->worker_changed, false);
  w.stop = box_->stop;
  w.ended = box_->stream_ended;
  w.shutdown = box_->shutdown.has_value();
  w.last_received = box_->last_received;
  return w;
}

absl::Status ControlClient::Impl::OnWelcome(const v1::SupervisorWelcome& w, StreamState* st) {
  if (w.rejection().code() != 0) {
    absl::Status refused(static_cast<absl::StatusCode>(w.rejection().code()),
                         absl::StrCat("the shepherd refused this supervisor: ", w.rejection().message()));
    spdlog::error("{}", Text(refused));
    return refused;
  }
  if (w.heartbeat_interval_ms() > 0) st->interval = std::chrono::milliseconds(w.heartbeat_interval_ms());
  if (w.heartbeat_timeout_ms() > 0) st->silence_limit = std::chrono::milliseconds(w.heartbeat_timeout_ms());
  st->welcomed = true;
  {
    std::lock_guard<std::mutex> lock(box_->mu);
    box_->stats.connected = true;
    metrics::Get(metrics::kSupervisorConnected).Set(1);
    ++box_->stats.welcomes;
  }
  spdlog::info("connected to shepherd {} (version {}) as '{}'", options_.shepherd, w.shepherd_version(),
               options_.supervisor_id);
  return absl::OkStatus();
}

absl::Status ControlClient::Impl::Session(bool* welcomed) {
  PCP_ASSIGN_OR_RETURN(std::shared_ptr<grpc::Channel> channel, Connect());
  std::unique_ptr<v1::Control::Stub> stub = v1::Control::NewStub(channel);
  grpc::ClientContext ctx;
  {
    std::lock_guard<std::mutex> lock(ctx_mu_);
    if (stopping_) return absl::CancelledError("stopping");
    active_ctx_ = &ctx;
  }
  std::unique_ptr<grpc::ClientReaderWriter<v1::SupervisorMessage, v1::ControlCommand>> stream = stub->Supervise(&ctx);
  StreamState st;
  {
    std::lock_guard<std::mutex> lock(box_->mu);
    st.session = ++box_->session;
    box_->incoming.clear();
    box_->stream_ended = false;
    box_->worker_changed = false;
    box_->last_received = Clock::now();
  }
  std::thread reader([&] {
    v1::ControlCommand command;
    while (stream->Read(&command)) {
      std::lock_guard<std::mutex> lock(box_->mu);
      box_->incoming.push_back(std::move(command));
      box_->last_received = Clock::now();
      box_->cv.notify_all();
    }
    std::lock_guard<std::mutex> lock(box_->mu);
    box_->stream_ended = true;
    box_->cv.notify_all();
  });

  absl::Status result;
  bool write_failed = false;
  auto write = [&](const v1::SupervisorMessage& m) {
    if (!write_failed && !stream->Write(m)) write_failed = true;
    return !write_failed;
  };
  write(Hello());
  st.welcome_deadline = Clock::now() + absl::ToChronoNanoseconds(options_.connect_timeout);
  st.next_heartbeat = Clock::now();
  bool shutdown_acked = false;
  while (!write_failed) {
    Wakeup w = Wait(st);
    for (const v1::ControlCommand& command : w.incoming) {
      if (command.kind_case() == v1::ControlCommand::kWelcome) {
        result = OnWelcome(command.welcome(), &st);
        if (!result.ok()) break;
        w.worker_changed = true;  // first heartbeat at once
      } else if (command.kind_case() != v1::ControlCommand::kHeartbeat) {
        HandleCommand(command, st.session);
      }
    }
    *welcomed = st.welcomed;
    if (!result.ok()) break;
    for (const v1::CommandAck& ack : w.acks) {
      v1::SupervisorMessage m;
      *m.mutable_ack() = ack;
      write(m);
    }
    if (w.shutdown) {
      shutdown_acked = true;
      break;
    }
    const Clock::time_point now = Clock::now();
    if (st.welcomed && (w.worker_changed || now >= st.next_heartbeat)) {
      if (write(Heartbeat(&st))) {
        std::lock_guard<std::mutex> lock(box_->mu);
        ++box_->stats.heartbeats_sent;
      }
      st.next_heartbeat = now + st.interval;
    }
    if (w.stop || w.ended) break;
    if (!st.welcomed && now >= st.welcome_deadline) {
      result = absl::DeadlineExceededError(
          absl::StrCat("no welcome from the shepherd within ", absl::FormatDuration(options_.connect_timeout)));
      break;
    }
    if (st.welcomed && now - w.last_received >= st.silence_limit) {
      result = absl::UnavailableError(
          absl::StrCat("the shepherd has been silent for ",
                       std::chrono::duration_cast<std::chrono::milliseconds>(now - w.last_received).count(), " ms"));
      break;
    }
  }

  if (shutdown_acked && !write_failed) {
    // Half-close and give the shepherd a moment to take the acknowledgement and end the RPC,
    // rather than cancelling it with the ack still in flight.
    stream->WritesDone();
    std::unique_lock<std::mutex> lock(box_->mu);
    box_->cv.wait_for(lock, std::chrono::seconds(2), [&] { return box_->stream_ended; });
  }
  {
    std::lock_guard<std::mutex> lock(ctx_mu_);
    ctx.TryCancel();  // unblocks the reader; harmless if the RPC is over
    active_ctx_ = nullptr;
  }
  reader.join();
  const absl::Status finished = FromGrpcStatus(stream->Finish());
  if (!result.ok()) return result;
  if (shutdown_acked) return absl::OkStatus();
  if (Stopping()) return absl::CancelledError("stopping");
  if (!finished.ok() && finished.code() != absl::StatusCode::kCancelled) return finished;
  return absl::UnavailableError("the shepherd ended the stream");
}

// ------------------------------------------------------------------ ControlClient

std::unique_ptr<ControlClient> ControlClient::Start(ControlClientOptions options, ProcessManager* manager,
                                                    std::function<void(std::string)> on_shutdown) {
  return std::unique_ptr<ControlClient>(
      new ControlClient(std::make_unique<Impl>(std::move(options), manager, std::move(on_shutdown))));
}

ControlClient::ControlClient(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ControlClient::~ControlClient() = default;
void ControlClient::Stop() { impl_->Stop(); }
ControlClientStats ControlClient::Stats() const { return impl_->Stats(); }

}  // namespace pcp::supervisor

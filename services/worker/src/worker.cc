#include "pcp/worker/worker.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "connection.h"
#include "message_handler.h"
#include "pcp/base/absl_fmt.h"
#include "pcp/base/status_macros.h"
#include "pcp/kernels/backend_factory.h"
#include "pcp/metrics/registry.h"
#include "pcp/netem/relay.h"
#include "pcp/rpc/channel_options.h"
#include "pcp/rpc/tensor_proto.h"
#include "pcp/worker/delta_fault.h"
#include "pcp/worker/program_cache.h"
#include "spdlog/spdlog.h"

namespace pcp::worker {
namespace {

std::string HostName() {
  char buf[256] = {0};
  if (gethostname(buf, sizeof(buf) - 1) != 0) return "unknown";
  return buf;
}

// Join refusals after which reconnecting cannot help: the worker exits (its supervisor
// decides). A stream that ends for any reason after a successful Join is reconnected.
bool Permanent(const absl::Status& s) {
  return absl::IsFailedPrecondition(s) || absl::IsUnauthenticated(s) || absl::IsInvalidArgument(s) ||
         absl::IsPermissionDenied(s) || absl::IsUnimplemented(s);
}

}  // namespace

struct Worker::Impl {
  WorkerOptions options;
  DataRoots data_roots;
  DeltaFault fault;  // testing only
  std::unique_ptr<Backend> backend;
  std::unique_ptr<ProgramCache> cache;
  std::unique_ptr<netem::Relay> relay;  // the emulated link, if any; outlives the channel
  std::shared_ptr<grpc::Channel> channel;
  v1::Backend backend_enum = v1::BACKEND_CPU;

  std::atomic<bool> stop{false};
  std::mutex mu;
  std::condition_variable cv;
  Connection* conn = nullptr;  // the current connection, for Stop()
  bool joined = false;         // conn has its JoinAck

  // Cancels as the reader thread sees them, before the main thread gets to the message.
  RoundCancels cancels;

  absl::Status Session(Connection& conn);
  v1::Join MakeJoin() const;
};

Worker::Worker(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Worker::~Worker() = default;

absl::StatusOr<std::unique_ptr<Worker>> Worker::Create(WorkerOptions options) {
  if (options.supervisor_id.empty()) return absl::InvalidArgumentError("--supervisor_id is required");
  if (options.shepherd.empty()) return absl::InvalidArgumentError("--shepherd is required (HOST:PORT)");
  auto impl = std::make_unique<Impl>();
  PCP_ASSIGN_OR_RETURN(impl->fault, DeltaFault::Parse(options.fault_delta));
  if (!impl->fault.empty()) {
    spdlog::warn("TESTING ONLY: --fault_delta={}: the Δs this worker sends are corrupted", options.fault_delta);
  }
  if (options.fault_slow_factor != 1) {
    if (!(options.fault_slow_factor >= 1 && options.fault_slow_factor <= 1000)) {
      return absl::InvalidArgumentError(
          absl::StrCat("--fault_slow_factor: ", options.fault_slow_factor, " is not in [1, 1000]"));
    }
    spdlog::warn("TESTING ONLY: --fault_slow_factor={}: each inner step takes {}x its own time",
                 options.fault_slow_factor, options.fault_slow_factor);
  }
  if (options.fault_init) spdlog::warn("TESTING ONLY: --fault_init: the θ₀ this worker draws is not the job's");
  impl->options = std::move(options);
  PCP_ASSIGN_OR_RETURN(impl->data_roots,
                       DataRoots::Confined(impl->options.data_roots, impl->options.max_data_file_bytes),
                       _ << "--data_roots");
  PCP_ASSIGN_OR_RETURN(impl->backend, CreateBackend(impl->options.backend, impl->options.threads),
                       _ << "--backend " << impl->options.backend);
  impl->backend_enum = impl->backend->Name() == "vulkan" ? v1::BACKEND_VULKAN : v1::BACKEND_CPU;
  impl->cache = std::make_unique<ProgramCache>(*impl->backend, impl->options.cache_dir);
  grpc::ChannelArguments args;
  ApplyStreamChannelOptions(&args);
  // gRPC's own reconnection follows the worker's backoff, so a shepherd that comes back is
  // found within one backoff step.
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS,
              static_cast<int>(absl::ToInt64Milliseconds(impl->options.backoff.initial)));
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS,
              static_cast<int>(absl::ToInt64Milliseconds(impl->options.backoff.initial)));
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS,
              static_cast<int>(absl::ToInt64Milliseconds(impl->options.backoff.max)));
  std::string target = impl->options.shepherd;
  PCP_RETURN_IF_ERROR(netem::ValidateEmulatedLink(impl->options.link, "--link_"));
  if (impl->options.link.enabled()) {
    // The plaintext-token rule must judge the shepherd's address, not the relay's loopback one.
    const auth::ClientCredentials& creds = impl->options.credentials;
    if (!creds.tls.enabled() && !creds.token.empty() && !auth::IsLoopbackAddress(target)) {
      return absl::FailedPreconditionError(absl::StrCat("refusing to send a token in clear text to ", target,
                                                        ": give a CA (TLS) for a non-loopback shepherd"));
    }
    PCP_ASSIGN_OR_RETURN(impl->relay, netem::Relay::Create(netem::ToRelayOptions(impl->options.link, target)),
                         _ << "--shepherd with --link_*");
    // The channel dials the relay but names the shepherd: in :authority and, with TLS, as the
    // name its certificate must carry (gRPC checks the default authority).
    args.SetString(GRPC_ARG_DEFAULT_AUTHORITY, target);
    spdlog::info("emulated link: {} (relay {} -> shepherd {})", netem::Describe(impl->options.link),
                 impl->relay->address(), target);
    target = impl->relay->address();
  }
  PCP_ASSIGN_OR_RETURN(impl->channel, auth::MakeChannel(target, impl->options.credentials, args));
  return std::unique_ptr<Worker>(new Worker(std::move(impl)));
}

void Worker::Stop() {
  impl_->stop = true;
  std::lock_guard<std::mutex> lock(impl_->mu);
  if (impl_->conn != nullptr) {
    // Joined: the session loop leaves cleanly (abandoning a round). Still joining: give up.
    if (impl_->joined) {
      impl_->conn->Interrupt();
    } else {
      impl_->conn->Abort();
    }
  }
  impl_->cv.notify_all();
}

v1::Join Worker::Impl::MakeJoin() const {
  v1::Join join;
  join.set_protocol_version(v1::PROTOCOL_VERSION_1);
  join.set_supervisor_id(options.supervisor_id);
  join.set_pid(static_cast<int32_t>(getpid()));
  join.set_incarnation(options.incarnation);
  join.set_backend(backend_enum);
  join.set_device(backend->DeviceDescription());
  join.set_threads(static_cast<uint32_t>(options.threads));
  join.set_version(PCP_VERSION);
  for (const std::string& h : cache->Hashes()) join.add_cached_program_hashes(h);
  join.set_host(HostName());
  join.add_features(v1::WORKER_FEATURE_THETA_FROM_INIT);  // (message_handler.h: DrawInitialTheta)
  return join;
}

absl::Status Worker::Run() {
  Impl& w = *impl_;
  Backoff backoff(w.options.backoff);
  metrics::Get(metrics::kWorkerBackendInfo, {w.backend->Name(), w.backend->DeviceDescription()}).Set(1);
  spdlog::info("worker {} (incarnation {}): backend {} ({}), shepherd {}", w.options.supervisor_id,
               w.options.incarnation, w.backend->Name(), w.backend->DeviceDescription(), w.options.shepherd);
  while (!w.stop) {
    Connection conn(w.channel);
    w.cancels.Reset();
    conn.SetPeekHook([&w](const v1::ShepherdMessage& m) { w.cancels.Peek(m); });
    {
      std::lock_guard<std::mutex> lock(w.mu);
      if (w.stop) break;
      w.conn = &conn;
      w.joined = false;
    }
    absl::Status opened = conn.Open(w.MakeJoin(), std::chrono::milliseconds(w.options.join_timeout_ms));
    {
      std::lock_guard<std::mutex> lock(w.mu);
      w.joined = opened.ok();
      if (!opened.ok()) w.conn = nullptr;
    }
    if (w.stop && !opened.ok()) break;
    absl::Status ended;
    if (opened.ok()) {
      backoff.Reset();
      spdlog::info("joined shepherd {} as {} (session {}, heartbeat {} ms)", w.options.shepherd,
                   w.options.supervisor_id, conn.ack().session_id(), conn.ack().heartbeat_interval_ms());
      ended = w.Session(conn);
      {
        std::lock_guard<std::mutex> lock(w.mu);
        w.conn = nullptr;
      }
      absl::Status closed = conn.Close();
      if (ended.ok()) ended = closed;
      if (w.stop) break;
      spdlog::warn("stream to the shepherd ended: {}", ended.ToString());
      if (!ended.ok()) metrics::Get(metrics::kWorkerErrorsTotal, {"stream"}).Increment();
    } else {
      spdlog::warn("cannot join shepherd {}: {}", w.options.shepherd, opened.ToString());
      metrics::Get(metrics::kWorkerErrorsTotal, {"connect"}).Increment();
      // A refused Join (wrong version, token or id) stays refused; anything else may pass.
      if (Permanent(opened)) return opened;
    }
    const auto wait = backoff.Next();
    spdlog::info("reconnecting in {} ms (attempt {})", absl::ToInt64Milliseconds(wait), backoff.attempt());
    std::unique_lock<std::mutex> lock(w.mu);
    w.cv.wait_for(lock, absl::ToChronoMilliseconds(wait), [&w] { return w.stop.load(); });
  }
  spdlog::info("worker {} stopped", w.options.supervisor_id);
  return absl::OkStatus();
}

absl::Status Worker::Impl::Session(Connection& conn) {
  // A new stream starts with a new Assignment.
  MessageHandler handler({.cache = cache.get(),
                          .data_roots = &data_roots,
                          .fault = &fault,
                          .slow_factor = options.fault_slow_factor,
                          .fault_init = options.fault_init,
                          .stop = &stop,
                          .cancels = &cancels,
                          .chunk_bytes = ChunkBytesForPeer(conn.ack().max_chunk_bytes())},
                         &conn);
  Connection::Incoming in;
  while (!stop) {
    const Connection::Pop pop = conn.Next(&in, std::chrono::milliseconds(500));
    if (pop == Connection::Pop::kEnded) return conn.status();
    if (pop == Connection::Pop::kTimeout) continue;
    absl::Status s = handler.Handle(in.message, in.payload.pieces());
    if (!s.ok()) {
      // The shepherd broke the protocol (or this worker cannot go on): say why, then drop the
      // stream; a fresh one starts clean.
      v1::WorkerMessage error;
      *error.mutable_error() = ErrorToProto(s);
      conn.Write(error);
      return s;
    }
  }
  return absl::OkStatus();
}

}  // namespace pcp::worker

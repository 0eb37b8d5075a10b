#include "pcp/shepherd/shepherd.h"

#include <grpcpp/ext/proto_server_reflection_plugin.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>

#include <atomic>
#include <chrono>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "admin_service.h"
#include "auth_refusals.h"
#include "blocking_pool.h"
#include "control_service.h"
#include "coordinator.h"
#include "listener_watchdog.h"
#include "method_roles.h"
#include "pcp/auth/authorization.h"
#include "pcp/auth/tls_credentials.h"
#include "pcp/base/absl_fmt.h"
#include "pcp/base/dir_lock.h"
#include "pcp/base/file.h"
#include "pcp/base/status_macros.h"
#include "pcp/base/termination_signal.h"
#include "pcp/metrics/registry.h"
#include "pcp/rpc/channel_options.h"
#include "pcp/shepherd/control_registry.h"
#include "pcp/shepherd/job_manager.h"
#include "pcp/training/job_memory.h"
#include "shepherd_metrics.h"
#include "spdlog/spdlog.h"
#include "training_service.h"
#include "worker_registry.h"

namespace pcp::shepherd {
namespace {

// The Admin service's view of the supervisors: the Control service's registry.
class ControlDirectory final : public SupervisorDirectory {
 public:
  explicit ControlDirectory(ControlRegistry* registry) : registry_(registry) {}

  void Command(SupervisorCommand command, const v1::WorkerCommandRequest& request,
               std::chrono::system_clock::time_point deadline,
               std::function<void(absl::StatusOr<v1::WorkerCommandResponse>)> done) override {
    // A call without a deadline still gets an answer: 60 s.
    auto timeout = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::system_clock::now());
    if (timeout > std::chrono::minutes(10) || timeout < std::chrono::milliseconds(0))
      timeout = std::chrono::seconds(60);
    v1::ControlCommand c = command == SupervisorCommand::kRestart
                               ? MakeRestartWorker(request.reason(), request.grace_ms())
                               : MakeDrainWorker(request.reason(), request.grace_ms());
    registry_->SendCommand(request.supervisor_id(), std::move(c), absl::FromChrono(timeout),
                           [done = std::move(done)](absl::StatusOr<v1::CommandAck> ack) {
                             if (!ack.ok()) {
                               done(ack.status());
                               return;
                             }
                             v1::WorkerCommandResponse response;
                             response.set_command_id(ack->command_id());
                             response.set_code(ack->code());
                             response.set_message(ack->message());
                             done(std::move(response));
                           });
  }

  std::vector<Supervisor> List() const override {
    std::vector<Supervisor> out;
    for (const SupervisorInfo& s : registry_->ListSupervisors()) {
      out.push_back(
          Supervisor{.supervisor_id = s.supervisor_id, .host = s.host, .connected = s.connected, .process = s.worker});
    }
    return out;
  }

 private:
  ControlRegistry* registry_;
};

}  // namespace

struct Shepherd::Impl {
  ShepherdConfig config;
  DirLock state_lock;  // held from before the first read of state_dir until Shutdown ends
  std::string address;
  int port = 0;
  std::unique_ptr<auth::Authenticator> authenticator;  // outlives the server
  std::unique_ptr<JobManager> jobs;
  std::unique_ptr<WorkerRegistry> registry;
  std::unique_ptr<Coordinator> coordinator;
  std::unique_ptr<BlockingPool> pool;
  std::unique_ptr<ControlRegistry> control_registry;
  std::unique_ptr<ControlDirectory> control_directory;
  std::unique_ptr<ControlService> control;
  std::unique_ptr<TrainingService> training;
  std::unique_ptr<AdminService> admin;
  std::unique_ptr<grpc::Server> server;
  std::unique_ptr<ListenerWatchdog> watchdog;  // null when listener_probe_interval_ms is 0
  std::atomic<bool> listener_wedged{false};    // what the watchdog found, kept past Shutdown
  std::once_flag shutdown_once;
};

namespace {

// Probes the real listening port on loopback; a listener that stopped accepting ends the
// process as SIGTERM would (a running job is checkpointed), and main() exits 1.
std::unique_ptr<ListenerWatchdog> StartListenerWatchdog(const ShepherdConfig& c, const std::string& host, int port,
                                                        bool tls) {
  absl::Duration interval = absl::Milliseconds(c.listener_probe_interval_ms);
  if (const absl::Duration systemd = SystemdWatchdogPeriod(); systemd > absl::ZeroDuration()) {
    // systemd restarts us unless WATCHDOG=1 comes within WatchdogSec: probe often enough.
    if (interval == absl::ZeroDuration() || interval > systemd / 3) interval = systemd / 3;
    spdlog::info("systemd watchdog every {}: WATCHDOG=1 after each good probe", absl::FormatDuration(systemd));
  }
  if (interval == absl::ZeroDuration()) {
    spdlog::info("listener watchdog off (listener_probe_interval_ms: 0)");
    return nullptr;
  }
  ListenerWatchdogOptions options{.target = ProbeTarget(host, port),
                                  .tls = tls,
                                  .interval = interval,
                                  .timeout = std::min(interval, absl::Seconds(5)),
                                  .failures = static_cast<int>(c.listener_probe_failures)};
  spdlog::info("listener watchdog: probes {} every {} ({}), exits after {} failures in a row", options.target,
               absl::FormatDuration(interval), tls ? "accept path" : "grpc.health.v1", options.failures);
  return std::make_unique<ListenerWatchdog>(std::move(options), [](std::string why) {
    spdlog::critical(
        "listener watchdog: {}; gRPC no longer accepts connections (an accept() that failed, e.g. "
        "'Too many open files', stops gRPC 1.51's listener for good): shutting down to exit 1 for a "
        "restart",
        why);
    RequestTermination("listener watchdog: the listener stopped accepting");
  });
}

}  // namespace

Shepherd::Shepherd(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Shepherd::~Shepherd() { Shutdown(); }

const std::string& Shepherd::address() const { return impl_->address; }
int Shepherd::port() const { return impl_->port; }

absl::StatusOr<std::unique_ptr<Shepherd>> Shepherd::Start(const ShepherdConfig& config) {
  PCP_RETURN_IF_ERROR(config.Validate());
  auto impl = std::make_unique<Impl>();
  impl->config = config;
  const ShepherdConfig& c = impl->config;
  PCP_RETURN_IF_ERROR(MakeDirs(c.state_dir), _ << "creating state_dir");
  // Every connection costs a descriptor, and gRPC 1.51's listener stops for good at the first
  // accept() that fails for want of one (listener_watchdog.h): take all the process may.
  RaiseOpenFileLimit();
  // Transport and auth first: a refused listen address or a bad certificate is reported
  // before anything binds or opens the state directory's jobs.
  auth::TlsFiles tls = c.tls;
  PCP_RETURN_IF_ERROR(auth::ResolveTlsFiles("tls", /*server=*/true, &tls));
  PCP_RETURN_IF_ERROR(auth::CheckPlaintextListen(c.listen, tls.enabled(), c.insecure));
  std::shared_ptr<grpc::ServerCredentials> credentials = grpc::InsecureServerCredentials();
  if (tls.enabled()) {
    PCP_ASSIGN_OR_RETURN(credentials, auth::MakeServerCredentials(tls));
  } else if (!auth::IsLoopbackAddress(c.listen)) {
    spdlog::warn("insecure: true: serving plaintext on {}; anyone on the network can read and forge the traffic",
                 c.listen);
    metrics::Get(metrics::kShepherdInsecureListen).Set(1);
  }
  impl->authenticator = std::make_unique<auth::Authenticator>(c.auth);
  DeclareAuthRefusals();
  CountTlsRefusals();
  spdlog::info("transport {}; {}", tls.enabled() ? (tls.ca.empty() ? "TLS" : "mTLS") : "plaintext",
               impl->authenticator->enabled()
                   ? absl::StrCat("auth on (", c.auth.identities.size(), " certificate identities, ",
                                  c.auth.tokens.size(), " tokens)")
                   : std::string("auth off (no identities or tokens configured)"));
  PCP_ASSIGN_OR_RETURN(impl->state_lock, DirLock::Acquire(c.state_dir, "state_dir"));
  PCP_ASSIGN_OR_RETURN(DataRoots data_roots, DataRoots::Confined(c.data_roots, c.max_data_file_bytes),
                       _ << "data_roots");
  AdmissionPolicy policy{.data_roots = std::move(data_roots),
                         .budgets = c.EffectiveMemoryBudgets(),
                         .max_jobs = c.max_jobs,
                         .max_queued_jobs = c.max_queued_jobs,
                         .max_start_attempts = c.max_job_start_attempts,
                         .max_job_yaml_bytes = c.max_job_yaml_bytes,
                         .max_finished_job_yamls = c.max_finished_job_yamls};
  spdlog::info(
      "admission: job data from {} (files up to {}); memory budgets {} per worker, {} at the shepherd; "
      "{} jobs kept, {} queued; job files up to {}, kept by the newest {} finished jobs",
      policy.data_roots.Describe(), FormatBytes(c.max_data_file_bytes), FormatBytes(policy.budgets.worker_bytes),
      FormatBytes(policy.budgets.shepherd_bytes), c.max_jobs, c.max_queued_jobs, FormatBytes(c.max_job_yaml_bytes),
      c.max_finished_job_yamls);
  PCP_ASSIGN_OR_RETURN(impl->jobs, JobManager::Open(c.state_dir, std::move(policy)));
  SessionOptions session{.heartbeat_interval_ms = static_cast<uint32_t>(c.heartbeat_interval_ms),
                         .heartbeat_timeout_ms = static_cast<uint32_t>(c.heartbeat_timeout_ms),
                         .chunk_bytes = c.chunk_bytes,
                         .max_chunk_bytes = c.AcceptedChunkBytes(),
                         .shepherd_version = PCP_VERSION};
  impl->registry =
      std::make_unique<WorkerRegistry>(session, c.heartbeat_timeout_ms / 1000.0, c.heartbeat_interval_ms / 1000.0,
                                       static_cast<double>(c.forget_supervisors_after_s));
  impl->coordinator = std::make_unique<Coordinator>(&impl->config, impl->jobs.get(), impl->registry.get());
  impl->registry->SetSink(impl->coordinator.get());
  Coordinator* coordinator = impl->coordinator.get();
  impl->jobs->SetListener([coordinator] { coordinator->Wake(); });
  impl->pool = std::make_unique<BlockingPool>(2);
  impl->training = std::make_unique<TrainingService>(impl->registry.get());
  impl->control_registry = std::make_unique<ControlRegistry>(absl::Seconds(c.forget_supervisors_after_s));
  impl->control_directory = std::make_unique<ControlDirectory>(impl->control_registry.get());
  impl->control = std::make_unique<ControlService>(
      impl->control_registry.get(),
      ControlServiceOptions{.heartbeat_interval_ms = static_cast<uint32_t>(c.heartbeat_interval_ms),
                            .heartbeat_timeout_ms = static_cast<uint32_t>(c.heartbeat_timeout_ms),
                            .version = PCP_VERSION});
  const int64_t now_ms =
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count();
  impl->admin = std::make_unique<AdminService>(AdminService::Deps{.jobs = impl->jobs.get(),
                                                                  .registry = impl->registry.get(),
                                                                  .coordinator = impl->coordinator.get(),
                                                                  .pool = impl->pool.get(),
                                                                  .config = &impl->config,
                                                                  .started_unix_ms = now_ms,
                                                                  .supervisors = impl->control_directory.get()});

  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  // The window each stream announces: the stated transport budget shared by the expected
  // number of worker streams (what gRPC 1.51 does with it: pcp/rpc/channel_options.h).
  const int window = c.ReceiveWindowBytes();
  ApplyStreamServerOptions(&builder, window);
  spdlog::info(
      "transport: {} receive window and {} Δ chunks per stream (transport_receive_bytes {} / "
      "transport_workers {}{})",
      FormatBytes(window), FormatBytes(c.AcceptedChunkBytes()), FormatBytes(c.transport_receive_bytes),
      c.transport_workers,
      int64_t{window} * c.transport_workers > c.transport_receive_bytes ? ", raised to the 64 KiB floor" : "");
  // gRPC's own memory (connections, buffers, pending messages) is bounded: past the quota it
  // refuses new streams rather than growing; and one connection opens at most so many streams.
  grpc::ResourceQuota quota("pcp-shepherd");
  quota.Resize(static_cast<size_t>(c.grpc_memory_bytes));
  builder.SetResourceQuota(quota);
  builder.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS, static_cast<int>(c.max_streams_per_connection));
  // An unauthenticated connection that never finishes its handshake (or, in plaintext, never
  // sends its HTTP/2 SETTINGS) is closed after this, not gRPC's 120 s. gRPC 1.51 has no limit
  // on connections in total or per peer (GRPC_ARG_MAX_ALLOWED_INCOMING_CONNECTIONS came later).
  builder.AddChannelArgument(GRPC_ARG_SERVER_HANDSHAKE_TIMEOUT_MS, static_cast<int>(c.handshake_timeout_ms));
  // A call's header list at most (also announced as SETTINGS_MAX_HEADER_LIST_SIZE): a larger
  // one is RESOURCE_EXHAUSTED. gRPC 1.51 applies it once the client has acknowledged the
  // SETTINGS, and only after reading the list whole (docs/operations.md#admission-and-limits).
  builder.AddChannelArgument(GRPC_ARG_MAX_METADATA_SIZE, static_cast<int>(c.max_metadata_bytes));
  std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> interceptors;
  // First: its refusal is the status the metrics interceptor after it counts.
  interceptors.push_back(auth::MakeAuthorizationInterceptorFactory(
      {.authenticator = impl->authenticator.get(), .rules = ShepherdMethodRules(), .on_refusal = CountAuthRefusal}));
  for (auto& f : AdminMetricsInterceptors()) interceptors.push_back(std::move(f));
  builder.experimental().SetInterceptorCreators(std::move(interceptors));
  builder.AddListeningPort(c.listen, credentials, &impl->port);
  builder.RegisterService(impl->training.get());
  builder.RegisterService(impl->admin.get());
  builder.RegisterService(impl->control.get());
  impl->server = builder.BuildAndStart();
  if (impl->server == nullptr || impl->port == 0) {
    return absl::UnavailableError(absl::StrCat("cannot listen on ", c.listen, " (address in use or invalid?)"));
  }
  const std::string host = c.listen.substr(0, c.listen.rfind(':'));
  impl->address = absl::StrCat(host, ":", impl->port);
  impl->registry->Start();
  impl->coordinator->Start();
  impl->watchdog = StartListenerWatchdog(c, host, impl->port, tls.enabled());
  spdlog::info("listening on {} (state dir {}, heartbeat {} ms / timeout {} ms)", impl->address, c.state_dir,
               c.heartbeat_interval_ms, c.heartbeat_timeout_ms);
  return std::unique_ptr<Shepherd>(new Shepherd(std::move(impl)));
}

bool Shepherd::listener_wedged() const {
  return impl_->listener_wedged || (impl_->watchdog != nullptr && impl_->watchdog->wedged());
}

void Shepherd::Shutdown() {
  if (impl_ == nullptr) return;
  std::call_once(impl_->shutdown_once, [this] {
    spdlog::info("shutting down");
    if (impl_->watchdog != nullptr) {
      impl_->listener_wedged = impl_->watchdog->wedged();
      impl_->watchdog.reset();  // no probe while the server stops
    }
    // The coordinator first: it checkpoints a running job while workers are still attached
    // (no new round starts), then the streams end (workers reconnect with backoff).
    impl_->coordinator->Stop();
    impl_->registry->Stop(absl::UnavailableError("the shepherd is shutting down"));
    impl_->control->EndAllStreams(absl::UnavailableError("the shepherd is shutting down"));
    impl_->admin->EndStreams(absl::UnavailableError("the shepherd is shutting down"));
    spdlog::debug("coordinator, workers and supervisors stopped");
    impl_->server->GetHealthCheckService()->Shutdown();
    impl_->server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
    spdlog::debug("server stopped");
    impl_->pool->Stop();
    impl_->state_lock.Release();
    spdlog::info("shut down");
  });
}

}  // namespace pcp::shepherd

// The shepherd's Control service on a real gRPC server (loopback, port 0), with real
// pcp-supervisor processes (each running the stand-in worker pcp_test_child) and, for
// protocol mistakes, a hand-driven client stream.
#include "control_service.h"

#include <grpcpp/grpcpp.h>
#include <signal.h>

#include <algorithm>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "pcp/auth/authorization.h"
#include "pcp/auth/tls_credentials.h"
#include "pcp/auth/token.h"
#include "pcp/shepherd/control_registry.h"
#include "pcp/supervisor/child_process.h"
#include "pcp/supervisor/supervisor_id.h"
#include "pcp/supervisor_testing/process_testing.h"

namespace pcp::shepherd {
namespace {

using supervisor::ChildProcess;
using supervisor::ExitInfo;
using supervisor_testing::kSupervisorPath;
using supervisor_testing::kTestChildPath;
using supervisor_testing::MakeTempDir;
using supervisor_testing::ProcessAlive;
using supervisor_testing::StartedPids;
using supervisor_testing::WaitUntil;
using ::testing::HasSubstr;
using ::testing::Not;

constexpr absl::Duration kWait = absl::Seconds(15);

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// A supervisor process and the files it writes.
struct Supervisor {
  std::string id;
  std::string log;     // the stand-in worker's event log
  std::string stderr;  // the supervisor's log
  std::unique_ptr<ChildProcess> process;
};

// A client stream driven by hand, to send what a real supervisor never would.
struct RawStream {
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<v1::Control::Stub> stub;
  grpc::ClientContext context;
  std::unique_ptr<grpc::ClientReaderWriter<v1::SupervisorMessage, v1::ControlCommand>> stream;
};

v1::SupervisorMessage HelloMessage(const std::string& id) {
  v1::SupervisorMessage m;
  m.mutable_hello()->set_protocol_version(v1::PROTOCOL_VERSION_1);
  m.mutable_hello()->set_supervisor_id(id);
  m.mutable_hello()->set_host("raw-client");
  return m;
}

class ControlServiceTest : public ::testing::Test {
 protected:
  void SetUp() override { StartShepherd(0); }

  void TearDown() override {
    for (Supervisor& s : supervisors_) {
      if (s.process && !s.process->reaped()) {
        kill(s.process->pid(), SIGTERM);
        if (!s.process->WaitFor(absl::Seconds(10))) s.process->Kill();
      }
      for (pid_t pid : StartedPids(s.log)) EXPECT_FALSE(ProcessAlive(pid)) << "orphan " << pid;
    }
    StopShepherd();
  }

  // `grants`: with any, the shepherd's authorization interceptor guards the service.
  void StartShepherd(int port, auth::AuthGrants grants = {}) {
    registry_ = std::make_unique<ControlRegistry>();
    service_ = std::make_unique<ControlService>(registry_.get(), ControlServiceOptions{.heartbeat_interval_ms = 100,
                                                                                       .heartbeat_timeout_ms = 1000,
                                                                                       .version = "test-shepherd"});
    grpc::ServerBuilder builder;
    if (!grants.empty()) {
      authenticator_ = std::make_unique<auth::Authenticator>(std::move(grants));
      std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> interceptors;
      interceptors.push_back(auth::MakeAuthorizationInterceptorFactory(
          {.authenticator = authenticator_.get(), .rules = {{"/pcp.v1.Control/Supervise", {auth::Role::kNode}}}}));
      builder.experimental().SetInterceptorCreators(std::move(interceptors));
    }
    builder.AddListeningPort(absl::StrCat("127.0.0.1:", port), grpc::InsecureServerCredentials(), &port_);
    builder.RegisterService(service_.get());
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    ASSERT_GT(port_, 0);
  }

  void StopShepherd() {
    if (server_ == nullptr) return;
    service_->EndAllStreams(absl::UnavailableError("shepherd stopping"));
    server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
    server_.reset();
    service_.reset();
    registry_.reset();
  }

  std::string Address() const { return absl::StrCat("127.0.0.1:", port_); }

  Supervisor& StartSupervisor(const std::string& id, std::vector<std::string> extra = {}) {
    const std::string dir = MakeTempDir("control_" + id);
    Supervisor s{.id = id, .log = dir + "/child.log", .stderr = dir + "/supervisor.stderr"};
    std::vector<std::string> argv = {kSupervisorPath,
                                     "--shepherd=" + Address(),
                                     "--supervisor_id=" + id,
                                     "--worker_binary=" + std::string(kTestChildPath),
                                     "--worker_args=--log=" + s.log,
                                     "--backoff_initial_ms=100",
                                     "--reconnect_initial_ms=100",
                                     "--reconnect_max_ms=300",
                                     "--grace_ms=3000",
                                     "--worker_grace_ms=3000"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    auto process = supervisor_testing::StartProcess(argv, s.stderr);
    EXPECT_TRUE(process.ok()) << process.status();
    if (process.ok()) s.process = std::make_unique<ChildProcess>(*std::move(process));
    supervisors_.push_back(std::move(s));
    return supervisors_.back();
  }

  // Waits until `id` is connected and `predicate` holds for what the registry knows.
  SupervisorInfo WaitForInfo(const std::string& id, const std::function<bool(const SupervisorInfo&)>& predicate,
                             const std::string& what) {
    SupervisorInfo last;
    EXPECT_TRUE(WaitUntil(
        [&] {
          std::optional<SupervisorInfo> info = registry_->GetSupervisor(id);
          if (!info) return false;
          last = *info;
          return predicate(last);
        },
        kWait))
        << "waiting for " << what << "; last known: connected=" << last.connected
        << " worker=" << last.worker.ShortDebugString();
    return last;
  }

  // Also waits for the worker's "start" line, which the stand-in writes once its SIGTERM
  // handler is installed (a SIGTERM before that would kill it outright).
  SupervisorInfo WaitConnectedWithWorker(const Supervisor& s) {
    SupervisorInfo info = WaitForInfo(
        s.id,
        [](const SupervisorInfo& i) {
          return i.connected && i.worker.state() == v1::WORKER_PROCESS_STATE_RUNNING && i.worker.pid() != 0;
        },
        "a connected supervisor with a running worker");
    EXPECT_TRUE(WaitUntil(
        [&] {
          std::vector<pid_t> pids = StartedPids(s.log);
          return std::find(pids.begin(), pids.end(), info.worker.pid()) != pids.end();
        },
        kWait))
        << "worker " << info.worker.pid() << " never logged its start";
    return info;
  }

  // The pid of the n-th worker (1-based) the stand-in logged; waits for its "start" line,
  // which follows the supervisor's report of the new process by a moment.
  pid_t NthWorker(const Supervisor& s, size_t n) {
    EXPECT_TRUE(WaitUntil([&] { return StartedPids(s.log).size() >= n; }, kWait));
    std::vector<pid_t> pids = StartedPids(s.log);
    return pids.size() >= n ? pids[n - 1] : -1;
  }

  // `token`: sent as "authorization: Bearer <token>" when not empty.
  std::unique_ptr<RawStream> OpenRaw(const std::string& token = "") {
    auto raw = std::make_unique<RawStream>();
    auth::ClientCredentials credentials;
    credentials.token = token;
    raw->channel = *auth::MakeChannel(Address(), credentials, grpc::ChannelArguments());
    raw->stub = v1::Control::NewStub(raw->channel);
    raw->context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    raw->stream = raw->stub->Supervise(&raw->context);
    return raw;
  }

  // Sends `first` on a fresh stream; returns the welcome's rejection and the RPC's status.
  std::pair<v1::Error, grpc::Status> RejectedHello(const v1::SupervisorMessage& first, const std::string& token = "") {
    std::unique_ptr<RawStream> raw = OpenRaw(token);
    // A stream refused by authorization may be over before the hello is written.
    const bool wrote = raw->stream->Write(first);
    EXPECT_TRUE(wrote || !token.empty() || authenticator_ != nullptr);
    v1::ControlCommand reply;
    v1::Error rejection;
    if (raw->stream->Read(&reply)) {
      EXPECT_TRUE(reply.has_welcome()) << reply.ShortDebugString();
      rejection = reply.welcome().rejection();
      while (raw->stream->Read(&reply)) {
      }
    }
    raw->stream->WritesDone();
    return {rejection, raw->stream->Finish()};
  }

  std::unique_ptr<auth::Authenticator> authenticator_;  // outlives server_
  std::unique_ptr<ControlRegistry> registry_;
  std::unique_ptr<ControlService> service_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
  std::vector<Supervisor> supervisors_;
};

TEST_F(ControlServiceTest, HandshakeRegistersTheStableIdAndHeartbeatsTrackTheWorker) {
  Supervisor& s = StartSupervisor("node-1");
  SupervisorInfo info = WaitConnectedWithWorker(s);
  EXPECT_EQ(info.supervisor_id, "node-1");
  EXPECT_EQ(info.host, supervisor::HostName());
  EXPECT_FALSE(info.version.empty());
  EXPECT_EQ(info.worker.incarnation(), 1u);
  const pid_t first = NthWorker(s, 1);
  EXPECT_EQ(info.worker.pid(), first);

  // Heartbeats keep coming, numbered from 1.
  info = WaitForInfo(
      s.id, [](const SupervisorInfo& i) { return i.heartbeats >= 5; }, "5 heartbeats");
  EXPECT_GE(info.last_heartbeat_sequence, 5u);
  EXPECT_LT(info.last_seen, absl::Seconds(1));

  // A worker killed behind the supervisor's back shows up in the heartbeats: the exit, then
  // the restarted process.
  ASSERT_EQ(kill(first, SIGKILL), 0);
  info = WaitForInfo(
      s.id,
      [&](const SupervisorInfo& i) {
        return i.worker.state() == v1::WORKER_PROCESS_STATE_RUNNING && i.worker.pid() != first && i.worker.pid() != 0;
      },
      "the restarted worker");
  EXPECT_EQ(info.worker.incarnation(), 2u);
  EXPECT_EQ(info.worker.restarts(), 1u);
  EXPECT_EQ(info.worker.last_signal(), SIGKILL);
  EXPECT_EQ(info.worker.last_exit_code(), -1);
  EXPECT_EQ(info.worker.pid(), NthWorker(s, 2));
}

TEST_F(ControlServiceTest, RestartWorkerIsCarriedOutAndAcknowledged) {
  Supervisor& s = StartSupervisor("node-restart");
  const pid_t old_pid = WaitConnectedWithWorker(s).worker.pid();
  absl::StatusOr<v1::CommandAck> ack = registry_->SendCommandAndWait(s.id, MakeRestartWorker("test restart", 0), kWait);
  ASSERT_TRUE(ack.ok()) << ack.status();
  EXPECT_EQ(ack->code(), 0) << ack->message();
  const pid_t new_pid = NthWorker(s, 2);
  EXPECT_THAT(ack->message(), HasSubstr(absl::StrCat("started worker ", new_pid)));
  EXPECT_FALSE(ProcessAlive(old_pid));
  EXPECT_TRUE(ProcessAlive(new_pid));
  EXPECT_EQ(supervisor_testing::LogLines(s.log, absl::StrCat("sigterm ", old_pid)).size(), 1u);
  SupervisorInfo info = WaitForInfo(
      s.id, [&](const SupervisorInfo& i) { return i.worker.pid() == new_pid; }, "new pid");
  EXPECT_EQ(info.worker.incarnation(), 2u);
}

TEST_F(ControlServiceTest, DrainWorkerStopsItUntilARestart) {
  Supervisor& s = StartSupervisor("node-drain");
  const pid_t pid = WaitConnectedWithWorker(s).worker.pid();
  absl::StatusOr<v1::CommandAck> ack = registry_->SendCommandAndWait(s.id, MakeDrainWorker("test drain", 0), kWait);
  ASSERT_TRUE(ack.ok()) << ack.status();
  EXPECT_EQ(ack->code(), 0) << ack->message();
  EXPECT_THAT(ack->message(), HasSubstr(absl::StrCat("worker ", pid, " exited")));
  EXPECT_FALSE(ProcessAlive(pid));
  WaitForInfo(
      s.id,
      [](const SupervisorInfo& i) {
        return i.worker.state() == v1::WORKER_PROCESS_STATE_STOPPED && i.worker.pid() == 0;
      },
      "a stopped worker");
  absl::SleepFor(absl::Milliseconds(600));  // several backoff periods: still stopped
  EXPECT_EQ(registry_->GetSupervisor(s.id)->worker.state(), v1::WORKER_PROCESS_STATE_STOPPED);
  EXPECT_EQ(StartedPids(s.log).size(), 1u);

  ack = registry_->SendCommandAndWait(s.id, MakeRestartWorker("back to work", 0), kWait);
  ASSERT_TRUE(ack.ok()) << ack.status();
  EXPECT_EQ(ack->code(), 0) << ack->message();
  const pid_t new_pid = NthWorker(s, 2);
  WaitForInfo(
      s.id,
      [&](const SupervisorInfo& i) {
        return i.worker.state() == v1::WORKER_PROCESS_STATE_RUNNING && i.worker.pid() == new_pid;
      },
      "the worker running again");
}

TEST_F(ControlServiceTest, ShutdownStopsTheWorkerAndTheSupervisor) {
  Supervisor& s = StartSupervisor("node-shutdown");
  const pid_t pid = WaitConnectedWithWorker(s).worker.pid();
  absl::StatusOr<v1::CommandAck> ack = registry_->SendCommandAndWait(s.id, MakeShutdown("test shutdown", 0), kWait);
  ASSERT_TRUE(ack.ok()) << ack.status();
  EXPECT_EQ(ack->code(), 0) << ack->message();
  EXPECT_THAT(ack->message(), HasSubstr("supervisor exiting"));
  std::optional<ExitInfo> exit = s.process->WaitFor(kWait);
  ASSERT_TRUE(exit.has_value()) << "supervisor still running";
  EXPECT_EQ(exit->exit_code, 0) << ReadAll(s.stderr);
  EXPECT_FALSE(ProcessAlive(pid));
  SupervisorInfo info = WaitForInfo(
      s.id, [](const SupervisorInfo& i) { return !i.connected; }, "a disconnected supervisor");
  EXPECT_GT(info.disconnected_unix_ms, 0);
  // Further commands: it is known but not connected.
  EXPECT_EQ(registry_->SendCommandAndWait(s.id, MakeRestartWorker("x", 0), kWait).status().code(),
            absl::StatusCode::kUnavailable);
}

TEST_F(ControlServiceTest, UnknownSupervisorIsNotFound) {
  absl::StatusOr<v1::CommandAck> ack = registry_->SendCommandAndWait("nobody", MakeRestartWorker("x", 0), kWait);
  EXPECT_EQ(ack.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(ack.status().message()), HasSubstr("nobody"));
}

TEST_F(ControlServiceTest, SupervisorReconnectsAfterTheShepherdRestarts) {
  Supervisor& s = StartSupervisor("node-reconnect");
  const pid_t pid = WaitConnectedWithWorker(s).worker.pid();
  const int port = port_;
  StopShepherd();
  // The shepherd is gone for a while; the worker is left alone.
  absl::SleepFor(absl::Milliseconds(1500));
  EXPECT_TRUE(ProcessAlive(pid));
  StartShepherd(port);
  ASSERT_EQ(port_, port);
  SupervisorInfo info = WaitConnectedWithWorker(s);
  EXPECT_EQ(info.worker.pid(), pid);  // same worker process, not restarted
  EXPECT_EQ(info.worker.incarnation(), 1u);
  EXPECT_EQ(StartedPids(s.log).size(), 1u);
  // Commands work on the new stream.
  absl::StatusOr<v1::CommandAck> ack =
      registry_->SendCommandAndWait(s.id, MakeRestartWorker("after reconnect", 0), kWait);
  ASSERT_TRUE(ack.ok()) << ack.status();
  EXPECT_EQ(ack->code(), 0);
}

TEST_F(ControlServiceTest, ASecondSupervisorClaimingALiveIdIsRefused) {
  Supervisor& s = StartSupervisor("node-dup");
  const pid_t pid = WaitConnectedWithWorker(s).worker.pid();
  auto [rejection, status] = RejectedHello(HelloMessage("node-dup"));
  EXPECT_EQ(rejection.code(), static_cast<int>(grpc::StatusCode::ALREADY_EXISTS));
  EXPECT_THAT(rejection.message(), HasSubstr("node-dup"));
  EXPECT_EQ(status.error_code(), grpc::StatusCode::ALREADY_EXISTS) << status.error_message();
  // The live one is undisturbed.
  SupervisorInfo info = *registry_->GetSupervisor("node-dup");
  EXPECT_TRUE(info.connected);
  EXPECT_EQ(info.worker.pid(), pid);
  EXPECT_EQ(info.host, supervisor::HostName());
  EXPECT_EQ(info.connections, 1u);

  // A second real supervisor with the same id keeps being refused (and keeps its own worker).
  Supervisor& twin = StartSupervisor("node-dup");
  EXPECT_TRUE(WaitUntil([&] { return ReadAll(twin.stderr).find("already connected") != std::string::npos; }, kWait))
      << ReadAll(twin.stderr);
  EXPECT_EQ(registry_->GetSupervisor("node-dup")->worker.pid(), pid);
}

TEST_F(ControlServiceTest, BadHellosGetClearStatuses) {
  v1::SupervisorMessage old_version = HelloMessage("node-v");
  old_version.mutable_hello()->set_protocol_version(v1::PROTOCOL_VERSION_UNSPECIFIED);
  auto [r1, s1] = RejectedHello(old_version);
  EXPECT_EQ(s1.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_THAT(s1.error_message(), HasSubstr("protocol_version"));
  EXPECT_EQ(r1.code(), static_cast<int>(grpc::StatusCode::FAILED_PRECONDITION));

  auto [r2, s2] = RejectedHello(HelloMessage("bad id!"));
  EXPECT_EQ(s2.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s2.error_message(), HasSubstr("supervisor_id"));

  v1::SupervisorMessage heartbeat_first;
  heartbeat_first.mutable_heartbeat()->mutable_heartbeat()->set_sequence(1);
  auto [r3, s3] = RejectedHello(heartbeat_first);
  EXPECT_EQ(s3.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(s3.error_message(), HasSubstr("first message must be a SupervisorHello"));
  EXPECT_TRUE(registry_->ListSupervisors().empty());
}

// Node tokens over loopback plaintext: the stream needs a node credential, and a node's
// credential speaks only for its own supervisor id.
TEST_F(ControlServiceTest, ANodeCredentialIsRequiredAndBoundToItsId) {
  const int port = port_;
  StopShepherd();
  StartShepherd(
      port, {.tokens = {{.name = "node-t", .sha256 = auth::TokenSha256("t-secret"), .roles = {auth::Role::kNode}},
                        {.name = "node-u", .sha256 = auth::TokenSha256("u-secret"), .roles = {auth::Role::kNode}},
                        {.name = "ops", .sha256 = auth::TokenSha256("ops-secret"), .roles = {auth::Role::kAdmin}}}});
  auto [r0, none] = RejectedHello(HelloMessage("node-t"));
  EXPECT_EQ(none.error_code(), grpc::StatusCode::UNAUTHENTICATED) << none.error_message();
  auto [r1, wrong] = RejectedHello(HelloMessage("node-t"), "wrong-secret");
  EXPECT_EQ(wrong.error_code(), grpc::StatusCode::UNAUTHENTICATED) << wrong.error_message();
  EXPECT_THAT(wrong.error_message(), Not(HasSubstr("wrong-secret")));
  auto [r2, admin] = RejectedHello(HelloMessage("node-t"), "ops-secret");
  EXPECT_EQ(admin.error_code(), grpc::StatusCode::PERMISSION_DENIED) << admin.error_message();
  auto [r3, other] = RejectedHello(HelloMessage("node-t"), "u-secret");
  EXPECT_EQ(other.error_code(), grpc::StatusCode::PERMISSION_DENIED) << other.error_message();
  EXPECT_EQ(r3.code(), static_cast<int>(grpc::StatusCode::PERMISSION_DENIED));
  EXPECT_THAT(other.error_message(), HasSubstr("'node-u' may not act as supervisor 'node-t'"));
  EXPECT_TRUE(registry_->ListSupervisors().empty());
  // The real supervisor reads its token from the environment (never argv) and gets in.
  setenv("PCP_TEST_NODE_TOKEN", "t-secret", 1);
  Supervisor& s = StartSupervisor("node-t", {"--token_source=env:PCP_TEST_NODE_TOKEN"});
  WaitConnectedWithWorker(s);
}

TEST_F(ControlServiceTest, ASilentSupervisorIsDroppedWithinTheHeartbeatTimeout) {
  std::unique_ptr<RawStream> raw = OpenRaw();
  ASSERT_TRUE(raw->stream->Write(HelloMessage("node-silent")));
  v1::ControlCommand reply;
  ASSERT_TRUE(raw->stream->Read(&reply));
  ASSERT_TRUE(reply.has_welcome());
  EXPECT_EQ(reply.welcome().rejection().code(), 0);
  EXPECT_EQ(reply.welcome().heartbeat_interval_ms(), 100u);
  EXPECT_EQ(reply.welcome().heartbeat_timeout_ms(), 1000u);
  EXPECT_EQ(reply.welcome().shepherd_version(), "test-shepherd");
  ASSERT_TRUE(registry_->GetSupervisor("node-silent")->connected);
  // Say nothing more: the shepherd's heartbeats arrive, then it gives up on us.
  const absl::Time start = absl::Now();
  int heartbeats = 0;
  while (raw->stream->Read(&reply)) heartbeats += reply.has_heartbeat() ? 1 : 0;
  const absl::Duration took = absl::Now() - start;
  EXPECT_GE(heartbeats, 3);
  EXPECT_GE(took, absl::Milliseconds(800));
  EXPECT_LT(took, absl::Seconds(5));
  SupervisorInfo info = *registry_->GetSupervisor("node-silent");
  EXPECT_FALSE(info.connected);
  EXPECT_THAT(info.disconnect_reason, HasSubstr("silent"));
  raw->stream->Finish();
}

}  // namespace
}  // namespace pcp::shepherd

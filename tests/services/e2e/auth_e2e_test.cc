// Security against real processes and real certificates (made with openssl by the test):
// plaintext refused on a non-loopback listen address; a TLS shepherd with tokens refuses
// every Admin, Training and Control method without a credential, every mutation for a
// viewer, and picks up a rotated certificate without a restart; an mTLS cluster with roles
// trains a job to the end while node-2's certificate cannot take node-1's slot, and no token
// shows in ps, logs or error messages.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <set>
#include <sstream>

#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "cluster_harness.h"
#include "pcp/auth/tls_credentials.h"
#include "pcp/auth/token.h"
#include "pcp/base/file.h"
#include "pcp/testing/metrics_scrape.h"
#include "pcp/v1/admin.grpc.pb.h"
#include "pcp/v1/control.grpc.pb.h"
#include "pcp/v1/training.grpc.pb.h"
#include "process_harness.h"
#include "reflection_client.h"
#include "test_certs.h"

namespace pcp::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

std::shared_ptr<grpc::Channel> Channel(const std::string& target, const auth::ClientCredentials& creds) {
  absl::StatusOr<std::shared_ptr<grpc::Channel>> channel = auth::MakeChannel(target, creds, grpc::ChannelArguments());
  EXPECT_TRUE(channel.ok()) << channel.status();
  return *channel;
}

void Deadline(grpc::ClientContext* context) {
  context->set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(10)));
}

// Every Admin method called once with an empty (or near-empty) request; name -> status.
std::vector<std::pair<std::string, grpc::Status>> CallEveryAdminMethod(grpc::Channel* channel) {
  auto stub = v1::Admin::NewStub(std::shared_ptr<grpc::Channel>(channel, [](grpc::Channel*) {}));
  std::vector<std::pair<std::string, grpc::Status>> out;
  auto call = [&](const std::string& name, auto method, auto request, auto response) {
    grpc::ClientContext context;
    Deadline(&context);
    out.emplace_back(name, ((*stub).*method)(&context, request, &response));
  };
  v1::SubmitJobRequest submit;
  submit.set_yaml("name: x\n");
  call("SubmitJob", &v1::Admin::Stub::SubmitJob, submit, v1::SubmitJobResponse());
  call("ListJobs", &v1::Admin::Stub::ListJobs, v1::ListJobsRequest(), v1::ListJobsResponse());
  v1::GetJobRequest get;
  get.set_job_id("job-0001");
  call("GetJob", &v1::Admin::Stub::GetJob, get, v1::Job());
  v1::CancelJobRequest cancel;
  cancel.set_job_id("job-0001");
  call("CancelJob", &v1::Admin::Stub::CancelJob, cancel, v1::Job());
  call("ListWorkers", &v1::Admin::Stub::ListWorkers, v1::ListWorkersRequest(), v1::ListWorkersResponse());
  v1::WorkerCommandRequest command;
  command.set_supervisor_id("node-1");
  call("RestartWorker", &v1::Admin::Stub::RestartWorker, command, v1::WorkerCommandResponse());
  call("DrainWorker", &v1::Admin::Stub::DrainWorker, command, v1::WorkerCommandResponse());
  call("GetCluster", &v1::Admin::Stub::GetCluster, v1::GetClusterRequest(), v1::Cluster());
  v1::GetJobHistoryRequest history;
  history.set_job_id("job-0001");
  call("GetJobHistory", &v1::Admin::Stub::GetJobHistory, history, v1::GetJobHistoryResponse());
  call("Sample", &v1::Admin::Stub::Sample, v1::SampleRequest(), v1::SampleResponse());
  {
    grpc::ClientContext context;
    Deadline(&context);
    v1::WatchJobRequest watch;
    watch.set_job_id("job-0001");
    auto reader = stub->WatchJob(&context, watch);
    v1::JobEvent event;
    while (reader->Read(&event)) {
    }
    out.emplace_back("WatchJob", reader->Finish());
  }
  return out;
}

// Training.Connect: sends a Join for `supervisor_id`; the stream's final status.
grpc::Status ConnectAndJoin(grpc::Channel* channel, const std::string& supervisor_id, v1::JoinAck* ack = nullptr) {
  auto stub = v1::Training::NewStub(std::shared_ptr<grpc::Channel>(channel, [](grpc::Channel*) {}));
  grpc::ClientContext context;
  Deadline(&context);
  auto stream = stub->Connect(&context);
  v1::WorkerMessage join;
  join.mutable_join()->set_protocol_version(v1::PROTOCOL_VERSION_1);
  join.mutable_join()->set_supervisor_id(supervisor_id);
  join.mutable_join()->set_incarnation(1000);  // would displace a live worker if admitted
  join.mutable_join()->set_backend(v1::BACKEND_CPU);
  stream->Write(join);
  v1::ShepherdMessage reply;
  bool admitted = false;
  while (!admitted && stream->Read(&reply)) {
    if (reply.has_join_ack() && ack != nullptr) *ack = reply.join_ack();
    admitted = reply.has_join_ack() && reply.join_ack().rejection().code() == 0;
  }
  stream->WritesDone();
  if (admitted) context.TryCancel();  // leave at once (the caller expected a refusal)
  return stream->Finish();
}

// Control.Supervise: sends a hello for `supervisor_id`; the stream's final status.
grpc::Status SuperviseHello(grpc::Channel* channel, const std::string& supervisor_id) {
  auto stub = v1::Control::NewStub(std::shared_ptr<grpc::Channel>(channel, [](grpc::Channel*) {}));
  grpc::ClientContext context;
  Deadline(&context);
  auto stream = stub->Supervise(&context);
  v1::SupervisorMessage hello;
  hello.mutable_hello()->set_protocol_version(v1::PROTOCOL_VERSION_1);
  hello.mutable_hello()->set_supervisor_id(supervisor_id);
  stream->Write(hello);
  v1::ControlCommand reply;
  while (stream->Read(&reply)) {
  }
  stream->WritesDone();
  return stream->Finish();
}

std::string CmdlineOf(pid_t pid) {
  std::ifstream in(absl::StrCat("/proc/", pid, "/cmdline"), std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// Every file under `dir` that contains `needle`.
std::vector<std::string> FilesContaining(const std::string& dir, const std::string& needle) {
  std::vector<std::string> found;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir)) {
    if (!entry.is_regular_file() || entry.path().extension() != ".log") continue;
    absl::StatusOr<std::string> text = ReadFile(entry.path().string());
    if (text.ok() && text->find(needle) != std::string::npos) found.push_back(entry.path().string());
  }
  return found;
}

class AuthE2eTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<TempDir> dir = TempDir::Create("pcp-auth");
    ASSERT_TRUE(dir.ok()) << dir.status();
    dir_ = std::make_unique<TempDir>(*std::move(dir));
    absl::StatusOr<TestCa> ca = TestCa::Create(path("ca"), "pcp-test-ca");
    ASSERT_TRUE(ca.ok()) << ca.status();
    ca_ = std::make_unique<TestCa>(*std::move(ca));
  }
  std::string path(const std::string& name) const { return absl::StrCat(dir_->path(), "/", name); }
  CertFiles Issue(const TestCa& ca, const std::string& cn, const std::vector<std::string>& sans = {}) {
    absl::StatusOr<CertFiles> c = ca.Issue(cn, sans);
    EXPECT_TRUE(c.ok()) << c.status();
    return c.ok() ? *c : CertFiles{};
  }

  std::unique_ptr<TempDir> dir_;
  std::unique_ptr<TestCa> ca_;
};

TEST_F(AuthE2eTest, PlaintextOnANonLoopbackAddressIsRefusedBeforeBinding) {
  absl::StatusOr<std::unique_ptr<Process>> shepherd =
      Process::Start({.binary = PCP_SHEPHERD_BINARY,
                      .args = {"--listen=0.0.0.0:0", absl::StrCat("--state_dir=", path("state")), "--metrics_listen="},
                      .log_path = path("refused.log")});
  ASSERT_TRUE(shepherd.ok()) << shepherd.status();
  absl::StatusOr<int> status = (*shepherd)->Wait(absl::Seconds(60));
  ASSERT_TRUE(status.ok()) << status.status();
  EXPECT_TRUE(WIFEXITED(*status) && WEXITSTATUS(*status) == 1) << DescribeWaitStatus(*status);
  const std::string log = (*shepherd)->Log();
  EXPECT_THAT(log, HasSubstr("refusing plaintext on non-loopback address 0.0.0.0:0: configure tls"));
  EXPECT_THAT(log, Not(HasSubstr("listening on")));
}

// TLS (server certificate only) with bearer tokens: every method needs a credential, a
// viewer cannot mutate, and a certificate replaced on disk serves new connections.
TEST_F(AuthE2eTest, TlsWithTokensRefusesEveryMethodAndReloadsTheCertificate) {
  absl::StatusOr<TestCa> other = TestCa::Create(path("ca2"), "pcp-test-ca-2");
  ASSERT_TRUE(other.ok()) << other.status();
  const CertFiles first = Issue(*ca_, "shepherd", {"DNS:localhost", "IP:127.0.0.1"});
  const CertFiles second = Issue(*other, "shepherd", {"DNS:localhost", "IP:127.0.0.1"});
  ASSERT_TRUE(WriteFileAtomic(path("shepherd.crt"), *ReadFile(first.cert)).ok());
  ASSERT_TRUE(WriteFileAtomic(path("shepherd.key"), *ReadFile(first.key)).ok());
  const std::string admin_token = "adm-" + auth::TokenSha256(path("a")).substr(0, 24);
  const std::string viewer_token = "view-" + auth::TokenSha256(path("v")).substr(0, 24);
  const std::string node_token = "node-" + auth::TokenSha256(path("n")).substr(0, 24);
  ASSERT_TRUE(WriteFileAtomic(path("shepherd.yaml"),
                              absl::StrCat("tls:\n  cert: ", path("shepherd.crt"), "\n  key: ", path("shepherd.key"),
                                           "\n  refresh_interval_s: 1\nauth:\n  tokens:\n"
                                           "    - {name: ops, sha256: ",
                                           auth::TokenSha256(admin_token),
                                           ", roles: [admin]}\n"
                                           "    - {name: grafana, sha256: ",
                                           auth::TokenSha256(viewer_token),
                                           ", roles: [viewer]}\n"
                                           "    - {name: node-1, sha256: ",
                                           auth::TokenSha256(node_token), ", roles: [node]}\n"))
                  .ok());
  const int port = PickFreePort();
  const std::string target = absl::StrCat("127.0.0.1:", port);
  absl::StatusOr<std::unique_ptr<Process>> shepherd =
      Process::Start({.binary = PCP_SHEPHERD_BINARY,
                      .args = {absl::StrCat("--config=", path("shepherd.yaml")), absl::StrCat("--listen=", target),
                               absl::StrCat("--state_dir=", path("state")), "--metrics_listen="},
                      .log_path = path("shepherd.log")});
  ASSERT_TRUE(shepherd.ok()) << shepherd.status();
  ASSERT_TRUE((*shepherd)->WaitForLog("listening on", absl::Seconds(60)).ok()) << (*shepherd)->LogTail();
  EXPECT_THAT((*shepherd)->Log(), HasSubstr("transport TLS; auth on (0 certificate identities, 3 tokens)"));

  const auth::TlsFiles trust_first{.ca = ca_->cert()};
  // No credential: UNAUTHENTICATED on every method of every service.
  std::shared_ptr<grpc::Channel> anonymous = Channel(target, {.tls = trust_first});
  for (const auto& [name, status] : CallEveryAdminMethod(anonymous.get())) {
    EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAUTHENTICATED) << name << ": " << status.error_message();
    EXPECT_THAT(status.error_message(), HasSubstr("no credential")) << name;
  }
  EXPECT_EQ(ConnectAndJoin(anonymous.get(), "node-1").error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_EQ(SuperviseHello(anonymous.get(), "node-1").error_code(), grpc::StatusCode::UNAUTHENTICATED);
  // A wrong token: UNAUTHENTICATED, and the token is not repeated.
  const std::string guess = "guess-" + admin_token;
  std::shared_ptr<grpc::Channel> guessing = Channel(target, {.tls = trust_first, .token = guess});
  for (const auto& [name, status] : CallEveryAdminMethod(guessing.get())) {
    EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAUTHENTICATED) << name;
    EXPECT_THAT(status.error_message(), Not(HasSubstr(guess))) << name;
  }
  // A viewer: reads pass (or fail for their own reasons), every other call is PERMISSION_DENIED.
  const std::set<std::string> reads = {"ListJobs", "GetJob", "WatchJob", "ListWorkers", "GetCluster", "GetJobHistory"};
  std::shared_ptr<grpc::Channel> viewer = Channel(target, {.tls = trust_first, .token = viewer_token});
  for (const auto& [name, status] : CallEveryAdminMethod(viewer.get())) {
    if (reads.count(name)) {
      EXPECT_NE(status.error_code(), grpc::StatusCode::PERMISSION_DENIED) << name;
      EXPECT_NE(status.error_code(), grpc::StatusCode::UNAUTHENTICATED) << name;
    } else {
      EXPECT_EQ(status.error_code(), grpc::StatusCode::PERMISSION_DENIED) << name << ": " << status.error_message();
      EXPECT_THAT(status.error_message(), HasSubstr("'grafana' (role viewer) may not call pcp.v1.Admin/" + name));
    }
  }
  EXPECT_EQ(ConnectAndJoin(viewer.get(), "node-1").error_code(), grpc::StatusCode::PERMISSION_DENIED);
  // The node token speaks for node-1 only.
  std::shared_ptr<grpc::Channel> node = Channel(target, {.tls = trust_first, .token = node_token});
  v1::JoinAck ack;
  grpc::Status claim = ConnectAndJoin(node.get(), "node-2", &ack);
  EXPECT_EQ(claim.error_code(), grpc::StatusCode::PERMISSION_DENIED) << claim.error_message();
  EXPECT_EQ(ack.rejection().code(), static_cast<int>(grpc::StatusCode::PERMISSION_DENIED));
  EXPECT_THAT(claim.error_message(), HasSubstr("'node-1' may not act as supervisor 'node-2'"));
  EXPECT_EQ(SuperviseHello(node.get(), "node-2").error_code(), grpc::StatusCode::PERMISSION_DENIED);
  // Reflection stays open (grpcurl -cacert CA list), and the token drives Admin calls.
  ReflectionClient reflection(target, auth::ClientCredentials{.tls = trust_first});
  absl::StatusOr<std::vector<std::string>> services = reflection.ListServices();
  ASSERT_TRUE(services.ok()) << services.status();
  EXPECT_THAT(*services, ::testing::Contains("pcp.v1.Admin"));
  EXPECT_EQ(reflection.CallUnary("pcp.v1.Admin/GetCluster", "{}").status().code(), absl::StatusCode::kUnauthenticated);
  ReflectionClient admin_reflection(target, auth::ClientCredentials{.tls = trust_first, .token = admin_token});
  EXPECT_TRUE(admin_reflection.CallUnary("pcp.v1.Admin/GetCluster", "{}").ok());

  // Rotation: a client that trusts only the second CA fails until the files are replaced
  // (atomic renames), then new connections get the new certificate; no restart.
  const auth::TlsFiles trust_second{.ca = other->cert()};
  auto get_cluster = [&](const auth::TlsFiles& tls) {
    std::shared_ptr<grpc::Channel> channel = Channel(target, {.tls = tls, .token = admin_token});
    grpc::ClientContext context;
    context.set_deadline(absl::ToChronoTime(absl::Now() + absl::Seconds(3)));
    v1::Cluster cluster;
    return v1::Admin::NewStub(channel)->GetCluster(&context, v1::GetClusterRequest(), &cluster);
  };
  EXPECT_EQ(get_cluster(trust_second).error_code(), grpc::StatusCode::UNAVAILABLE);
  const pid_t pid = (*shepherd)->pid();
  ASSERT_TRUE(WriteFileAtomic(path("shepherd.key"), *ReadFile(second.key)).ok());
  ASSERT_TRUE(WriteFileAtomic(path("shepherd.crt"), *ReadFile(second.cert)).ok());
  grpc::Status rotated;
  for (absl::Time give_up = absl::Now() + absl::Seconds(60); absl::Now() < give_up;) {
    rotated = get_cluster(trust_second);
    if (rotated.ok()) break;
    absl::SleepFor(absl::Milliseconds(250));
  }
  EXPECT_TRUE(rotated.ok()) << rotated.error_message() << "\n" << (*shepherd)->LogTail();
  EXPECT_EQ(get_cluster(trust_first).error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ((*shepherd)->pid(), pid);
  EXPECT_TRUE((*shepherd)->Running());

  // No token in the shepherd's log or command line.
  for (const std::string& secret : {admin_token, viewer_token, node_token, guess}) {
    EXPECT_THAT((*shepherd)->Log(), Not(HasSubstr(secret)));
    EXPECT_THAT(CmdlineOf(pid), Not(HasSubstr(secret)));
  }
  absl::StatusOr<int> stopped = (*shepherd)->Stop();
  ASSERT_TRUE(stopped.ok());
  EXPECT_TRUE(WIFEXITED(*stopped) && WEXITSTATUS(*stopped) == 0) << DescribeWaitStatus(*stopped);
}

// Metric labels come from a closed set: 300 calls to made-up methods with 2,000-character
// names, with no credential and with a wrong one, add no series to /metrics (they count under
// service="other"), the log lines that name them are bounded, and the shepherd keeps serving.
TEST_F(AuthE2eTest, MadeUpMethodsCannotGrowTheMetrics) {
  const std::string admin_token = "adm-" + auth::TokenSha256(path("a")).substr(0, 24);
  ASSERT_TRUE(
      WriteFileAtomic(path("shepherd.yaml"), absl::StrCat("auth:\n  tokens:\n    - {name: ops, sha256: ",
                                                          auth::TokenSha256(admin_token), ", roles: [admin]}\n"))
          .ok());
  const std::string target = absl::StrCat("127.0.0.1:", PickFreePort());
  const int metrics_port = PickFreePort();
  absl::StatusOr<std::unique_ptr<Process>> shepherd = Process::Start(
      {.binary = PCP_SHEPHERD_BINARY,
       .args = {absl::StrCat("--config=", path("shepherd.yaml")), absl::StrCat("--listen=", target),
                absl::StrCat("--state_dir=", path("state")), absl::StrCat("--metrics_listen=127.0.0.1:", metrics_port)},
       .log_path = path("shepherd.log")});
  ASSERT_TRUE(shepherd.ok()) << shepherd.status();
  ASSERT_TRUE((*shepherd)->WaitForLog("listening on", absl::Seconds(60)).ok()) << (*shepherd)->LogTail();
  auto refusal_series = [&](std::string* text) {
    absl::StatusOr<std::string> metrics = HttpGet("127.0.0.1", metrics_port, "/metrics");
    EXPECT_TRUE(metrics.ok()) << metrics.status();
    if (!metrics.ok()) return -1;
    *text = *metrics;
    int n = 0;
    for (const auto& [key, value] : ParseSamples(*metrics))
      n += absl::StartsWith(key, "pcp_shepherd_auth_refusals_total{");
    return n;
  };
  std::string before_text, after_text;
  const int before = refusal_series(&before_text);
  EXPECT_EQ(before, 4 * 5);  // {Admin, Training, Control, other} x the 5 reasons, declared at start
  const std::string long_name(2000, 'x');
  std::shared_ptr<grpc::Channel> anonymous = Channel(target, {});
  std::shared_ptr<grpc::Channel> guessing = Channel(target, {.token = "guess-" + admin_token});
  int unauthenticated = 0;
  for (int i = 0; i < 300; ++i) {
    grpc::GenericStub stub(i % 2 == 0 ? anonymous : guessing);
    grpc::ClientContext context;
    Deadline(&context);
    grpc::Slice empty("");
    grpc::ByteBuffer request(&empty, 1), response;
    std::promise<grpc::Status> finished;
    stub.UnaryCall(&context, absl::StrCat("/evil.", long_name, i, "/M", i), grpc::StubOptions(), &request, &response,
                   [&](grpc::Status s) { finished.set_value(std::move(s)); });
    unauthenticated += finished.get_future().get().error_code() == grpc::StatusCode::UNAUTHENTICATED;
  }
  EXPECT_EQ(unauthenticated, 300);
  EXPECT_EQ(refusal_series(&after_text), before);
  EXPECT_GE(SampleValue(after_text, "pcp_shepherd_auth_refusals_total",
                        {{"service", "other"}, {"reason", "no_credential"}})
                .value_or(0),
            150);
  EXPECT_GE(SampleValue(after_text, "pcp_shepherd_auth_refusals_total", {{"service", "other"}, {"reason", "bad_token"}})
                .value_or(0),
            150);
  EXPECT_LT(after_text.size(), before_text.size() + 1024) << "the exposition grew";
  EXPECT_THAT((*shepherd)->Log(), Not(HasSubstr(long_name)));  // log lines bounded
  // Reflection v1, which gRPC 1.51 does not serve, is UNIMPLEMENTED (clients fall back to
  // v1alpha), not refused.
  {
    grpc::GenericStub stub(anonymous);
    grpc::ClientContext context;
    Deadline(&context);
    grpc::Slice empty("");
    grpc::ByteBuffer request(&empty, 1), response;
    std::promise<grpc::Status> finished;
    stub.UnaryCall(&context, "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo", grpc::StubOptions(), &request,
                   &response, [&](grpc::Status s) { finished.set_value(std::move(s)); });
    EXPECT_EQ(finished.get_future().get().error_code(), grpc::StatusCode::UNIMPLEMENTED);
  }
  // Still serving.
  std::shared_ptr<grpc::Channel> admin = Channel(target, {.token = admin_token});
  grpc::ClientContext context;
  Deadline(&context);
  v1::Cluster cluster;
  EXPECT_TRUE(v1::Admin::NewStub(admin)->GetCluster(&context, v1::GetClusterRequest(), &cluster).ok());
  absl::StatusOr<int> stopped = (*shepherd)->Stop();
  ASSERT_TRUE(stopped.ok());
}

// mTLS with roles: a whole job runs; node-2's certificate cannot take node-1's slot; viewers
// cannot mutate; mutations are audited; no token shows in ps, logs or messages.
TEST_F(AuthE2eTest, MtlsClusterWithRolesTrainsAndKeepsNodesApart) {
  const CertFiles server = Issue(*ca_, "shepherd", {"DNS:localhost", "IP:127.0.0.1"});
  const CertFiles node1 = Issue(*ca_, "node-1", {"DNS:node-1"});
  const CertFiles node2 = Issue(*ca_, "node-2", {"DNS:node-2"});
  const CertFiles ops = Issue(*ca_, "ops-admin");  // no SAN: the identity is the CN
  const CertFiles watcher = Issue(*ca_, "watcher");
  absl::StatusOr<TestCa> rogue_ca = TestCa::Create(path("rogue"), "rogue-ca");
  ASSERT_TRUE(rogue_ca.ok());
  const CertFiles rogue = Issue(*rogue_ca, "node-1", {"DNS:node-1"});
  const std::string node_token = "nodetok-" + auth::TokenSha256(path("n1")).substr(0, 24);
  const std::string viewer_token = "viewtok-" + auth::TokenSha256(path("v1")).substr(0, 24);
  ASSERT_TRUE(WriteFileAtomic(path("viewer.token"), viewer_token + "\n").ok());

  ClusterHarness cluster(path("cluster"));
  ClusterSecurity security;
  security.shepherd_yaml = absl::StrCat(
      "tls:\n  ca: ", ca_->cert(), "\n  cert: ", server.cert, "\n  key: ", server.key,
      "\nauth:\n  identities:\n    - {identity: node-1, roles: [node]}\n    - {identity: node-2, roles: [node]}\n"
      "    - {identity: ops-admin, roles: [admin]}\n    - {identity: watcher, roles: [viewer]}\n"
      "  tokens:\n    - {name: node-1, sha256: ",
      auth::TokenSha256(node_token), ", roles: [node]}\n",
      "    - {name: grafana, sha256: ", auth::TokenSha256(viewer_token), ", roles: [viewer]}\n");
  // node-1 presents its certificate and, read from its environment, its token.
  setenv("PCP_TEST_NODE_TOKEN", node_token.c_str(), 1);
  security.supervisor_args = [&](int i) -> std::vector<std::string> {
    const CertFiles& cert = i == 0 ? node1 : node2;
    return {absl::StrCat("--tls_ca=", ca_->cert()), absl::StrCat("--tls_cert=", cert.cert),
            absl::StrCat("--tls_key=", cert.key), "--token_source=env:PCP_TEST_NODE_TOKEN"};
  };
  security.pcpctl_args = {absl::StrCat("--ca=", ca_->cert()), absl::StrCat("--cert=", ops.cert),
                          absl::StrCat("--key=", ops.key)};
  security.admin = {.tls = {.ca = ca_->cert(), .cert = ops.cert, .key = ops.key}};
  cluster.SetSecurity(security);
  ASSERT_TRUE(cluster.StartCluster(1).ok()) << cluster.Logs();
  EXPECT_THAT(cluster.shepherd()->Log(), HasSubstr("transport mTLS; auth on (4 certificate identities, 2 tokens)"));
  const pid_t worker = cluster.WorkerPid(0);
  ASSERT_GT(worker, 0);

  const std::string job_file = cluster.WriteJob({.name = "tls_job", .rounds = 12, .inner_steps = 20, .workers = 1});
  absl::StatusOr<CommandResult> submit = cluster.Pcpctl({"submit", "--quiet", job_file});
  ASSERT_TRUE(submit.ok()) << submit.status();
  ASSERT_EQ(submit->exit_code, 0) << submit->output;
  const std::string job_id(absl::StripAsciiWhitespace(submit->output));

  const std::string target = cluster.admin_target();
  // While node-1 trains (its first round is done), node-2's certificate claims node-1's slot.
  ASSERT_TRUE(cluster.shepherd()->WaitForLog("round 1/12 complete", absl::Seconds(300)).ok()) << cluster.Logs();
  const size_t claimed_at = cluster.shepherd()->LogSize();
  // Refused on both streams; and a node may not use Admin at all.
  std::shared_ptr<grpc::Channel> impostor =
      Channel(target, {.tls = {.ca = ca_->cert(), .cert = node2.cert, .key = node2.key}});
  grpc::Status join = ConnectAndJoin(impostor.get(), "node-1");
  EXPECT_EQ(join.error_code(), grpc::StatusCode::PERMISSION_DENIED) << join.error_message();
  EXPECT_THAT(join.error_message(), HasSubstr("'node-2' may not act as supervisor 'node-1'"));
  grpc::Status hello = SuperviseHello(impostor.get(), "node-1");
  EXPECT_EQ(hello.error_code(), grpc::StatusCode::PERMISSION_DENIED) << hello.error_message();
  EXPECT_EQ(CallEveryAdminMethod(impostor.get())[1].second.error_code(), grpc::StatusCode::PERMISSION_DENIED);

  // Without a client certificate, or with one from another CA, the handshake fails.
  EXPECT_EQ(CallEveryAdminMethod(Channel(target, {.tls = {.ca = ca_->cert()}}).get())[0].second.error_code(),
            grpc::StatusCode::UNAVAILABLE);
  std::shared_ptr<grpc::Channel> rogue_channel =
      Channel(target, {.tls = {.ca = ca_->cert(), .cert = rogue.cert, .key = rogue.key}});
  EXPECT_EQ(ConnectAndJoin(rogue_channel.get(), "node-1").error_code(), grpc::StatusCode::UNAVAILABLE);

  // A viewer certificate: every mutation is PERMISSION_DENIED.
  std::shared_ptr<grpc::Channel> viewer =
      Channel(target, {.tls = {.ca = ca_->cert(), .cert = watcher.cert, .key = watcher.key}});
  for (const auto& [name, status] : CallEveryAdminMethod(viewer.get())) {
    if (name == "SubmitJob" || name == "CancelJob" || name == "RestartWorker" || name == "DrainWorker" ||
        name == "Sample") {
      EXPECT_EQ(status.error_code(), grpc::StatusCode::PERMISSION_DENIED) << name << ": " << status.error_message();
    }
  }
  // grpcurl's way, with a client certificate and a token: node-2's certificate gets through
  // the handshake, the viewer token gives the role.
  ReflectionClient reflection(target,
                              auth::ClientCredentials{.tls = {.ca = ca_->cert(), .cert = node2.cert, .key = node2.key},
                                                      .token = viewer_token});
  absl::StatusOr<std::vector<std::string>> services = reflection.ListServices();
  ASSERT_TRUE(services.ok()) << services.status();
  EXPECT_THAT(*services, ::testing::IsSupersetOf({"pcp.v1.Admin", "pcp.v1.Training", "pcp.v1.Control"}));
  absl::StatusOr<std::string> job_json =
      reflection.CallUnary("pcp.v1.Admin/GetJob", absl::StrCat(R"({"jobId": ")", job_id, R"("})"));
  ASSERT_TRUE(job_json.ok()) << job_json.status();
  EXPECT_THAT(*job_json, HasSubstr(job_id));
  EXPECT_EQ(
      reflection.CallUnary("pcp.v1.Admin/CancelJob", absl::StrCat(R"({"jobId": ")", job_id, R"("})")).status().code(),
      absl::StatusCode::kPermissionDenied);
  // pcpctl with the viewer token from a file (PCP_TOKEN_FILE works the same way).
  absl::StatusOr<CommandResult> jobs = cluster.Pcpctl({"jobs", absl::StrCat("--token_file=", path("viewer.token"))});
  ASSERT_TRUE(jobs.ok());
  EXPECT_EQ(jobs->exit_code, 0) << jobs->output;

  // node-1 trained on, undisturbed, to the end.
  absl::StatusOr<v1::Job> done = cluster.WaitForJobEnd(job_id, absl::Seconds(600));
  ASSERT_TRUE(done.ok()) << done.status();
  EXPECT_EQ(done->state(), v1::JOB_STATE_COMPLETED) << done->ShortDebugString();
  EXPECT_EQ(cluster.WorkerPid(0), worker);
  // ... and rounds went on completing with node-1 after the claim.
  EXPECT_TRUE(cluster.shepherd()->WaitForLog("complete: 1 workers (node-1)", absl::Seconds(1), claimed_at).ok());
  const std::string log = cluster.shepherd()->Log();
  EXPECT_THAT(log, HasSubstr("audit: pcp.v1.Admin/SubmitJob by 'ops-admin' (certificate, role admin)"));
  EXPECT_THAT(log, HasSubstr("audit: pcp.v1.Admin/CancelJob by 'watcher' (certificate, role viewer)"));
  // A token over a certificate: the token decides, the audit line names both.
  EXPECT_THAT(log, HasSubstr("audit: pcp.v1.Admin/CancelJob by 'grafana' (token, role viewer; certificate 'node-2')"));

  absl::StatusOr<std::string> metrics = cluster.ScrapeMetrics(cluster.shepherd_metrics_port());
  ASSERT_TRUE(metrics.ok()) << metrics.status();
  EXPECT_GE(SampleValue(*metrics, "pcp_shepherd_auth_refusals_total", {{"service", "Admin"}, {"reason", "wrong_role"}})
                .value_or(0),
            6);
  EXPECT_GE(SampleValue(*metrics, "pcp_shepherd_auth_refusals_total",
                        {{"service", "Training"}, {"reason", "node_mismatch"}})
                .value_or(0),
            1);
  EXPECT_GE(SampleValue(*metrics, "pcp_shepherd_auth_refusals_total",
                        {{"service", "Control"}, {"reason", "node_mismatch"}})
                .value_or(0),
            1);
  // The rogue CA's certificate never became a call: its refused handshake is counted.
  EXPECT_GE(SampleValue(*metrics, "pcp_shepherd_tls_refusals_total", {{"reason", "bad_certificate"}}).value_or(0), 1);

  // No token in any process's command line (ps) or in any log of the cluster.
  cluster.RecordWorkerPids();
  for (pid_t pid : cluster.PidsSeen()) {
    const std::string cmdline = CmdlineOf(pid);
    EXPECT_THAT(cmdline, Not(HasSubstr(node_token))) << pid;
    EXPECT_THAT(cmdline, Not(HasSubstr(viewer_token))) << pid;
  }
  EXPECT_THAT(CmdlineOf(worker), HasSubstr("--token_source=env:PCP_TEST_NODE_TOKEN"));
  EXPECT_THAT(FilesContaining(cluster.dir(), node_token), ::testing::IsEmpty());
  EXPECT_THAT(FilesContaining(cluster.dir(), viewer_token), ::testing::IsEmpty());
  ASSERT_TRUE(cluster.StopAll().ok());
  unsetenv("PCP_TEST_NODE_TOKEN");
}

}  // namespace
}  // namespace pcp::testing

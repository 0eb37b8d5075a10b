// The shepherd in-process on loopback (real gRPC server on a free port) against hand-driven
// clients: bad input on every service gets a clear status naming the problem and disturbs
// nothing else; duplicate supervisor ids; dead workers found by missed heartbeats.
#include <grpcpp/grpcpp.h>

#include <chrono>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "fake_worker.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pcp/base/file.h"
#include "pcp/rpc/crc32c.h"
#include "pcp/shepherd/shepherd.h"
#include "pcp/v1/admin.grpc.pb.h"
#include "pcp/v1/training.grpc.pb.h"
#include "process_harness.h"

namespace pcp::shepherd {
namespace {

using ::testing::HasSubstr;

void SetDeadline(grpc::ClientContext* context, int seconds) {
  context->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(seconds));
}

std::string TinyJobYaml() {
  absl::StatusOr<std::string> yaml = ReadFile(std::string(PCP_SOURCE_DIR) + "/config/jobs/tiny.yaml");
  return yaml.ok() ? *yaml : "";
}

class ProtocolTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<testing::TempDir> dir = testing::TempDir::Create("pcp-shepherd-protocol");
    ASSERT_TRUE(dir.ok()) << dir.status();
    dir_.emplace(*std::move(dir));
    config_.listen = "127.0.0.1:0";
    config_.state_dir = dir_->path() + "/state";
    config_.heartbeat_interval_ms = 100;
    config_.heartbeat_timeout_ms = 600;
    config_.round_start_grace_ms = 0;
    StartShepherd();
  }
  void TearDown() override {
    if (shepherd_) shepherd_->Shutdown();
  }

  void StartShepherd() {
    absl::StatusOr<std::unique_ptr<Shepherd>> s = Shepherd::Start(config_);
    ASSERT_TRUE(s.ok()) << s.status();
    shepherd_ = *std::move(s);
    channel_ = grpc::CreateChannel(shepherd_->address(), grpc::InsecureChannelCredentials());
    admin_ = v1::Admin::NewStub(channel_);
    training_ = v1::Training::NewStub(channel_);
  }

  std::unique_ptr<FakeWorker> Connect(const std::string& id, uint64_t incarnation = 1,
                                      const std::vector<v1::WorkerFeature>& features = {
                                          v1::WORKER_FEATURE_THETA_FROM_INIT}) {
    return std::make_unique<FakeWorker>(training_.get(), id, incarnation, features);
  }

  absl::StatusOr<v1::SubmitJobResponse> Submit(const std::string& yaml, const std::string& file_name) {
    grpc::ClientContext context;
    SetDeadline(&context, 60);
    v1::SubmitJobRequest r;
    r.set_yaml(yaml);
    r.set_file_name(file_name);
    r.set_base_dir(std::string(PCP_SOURCE_DIR) + "/config/jobs");
    v1::SubmitJobResponse response;
    grpc::Status s = admin_->SubmitJob(&context, r, &response);
    if (!s.ok()) return absl::Status(static_cast<absl::StatusCode>(s.error_code()), s.error_message());
    return response;
  }

  // Join, Assignment, AssignmentReady, θ: returns StartRound's round.
  static uint64_t RunToStartRound(FakeWorker* w, v1::Assignment* assignment) {
    return w->ExpectJoinAck() ? w->RunToStartRound(assignment) : 0;
  }

  v1::Job GetJob(const std::string& id) {
    grpc::ClientContext context;
    SetDeadline(&context, 10);
    v1::GetJobRequest r;
    r.set_job_id(id);
    v1::Job job;
    EXPECT_TRUE(admin_->GetJob(&context, r, &job).ok());
    return job;
  }

  std::optional<testing::TempDir> dir_;
  ShepherdConfig config_;
  std::unique_ptr<Shepherd> shepherd_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::Admin::Stub> admin_;
  std::unique_ptr<v1::Training::Stub> training_;
};

TEST_F(ProtocolTest, MalformedYamlIsRejectedWithItsPositionAndNothingIsQueued) {
  absl::StatusOr<v1::SubmitJobResponse> r = Submit("name: x\nmodel:\n  n_layer: [1, 2\n", "bad.yaml");
  ASSERT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << r.status();
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("bad.yaml:"));

  r = Submit("model:\n  n_embed: 32\ndata:\n  path: x.txt\n", "");
  ASSERT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << r.status();
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("<submitted job>:2:3: unknown key 'n_embed'"));

  r = Submit("data:\n  path: no/such/file.txt\n", "missing.yaml");
  ASSERT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << r.status();
  EXPECT_THAT(std::string(r.status().message()), HasSubstr("missing.yaml:2:9"));

  grpc::ClientContext context;
  SetDeadline(&context, 10);
  v1::ListJobsResponse jobs;
  ASSERT_TRUE(admin_->ListJobs(&context, v1::ListJobsRequest(), &jobs).ok());
  EXPECT_EQ(jobs.jobs_size(), 0);
  // The shepherd still takes good jobs.
  r = Submit(TinyJobYaml(), "tiny.yaml");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->job_id(), "job-0001");
}

TEST_F(ProtocolTest, UnknownJobIdIsNotFound) {
  {
    grpc::ClientContext context;
    SetDeadline(&context, 10);
    v1::GetJobRequest r;
    r.set_job_id("job-9999");
    v1::Job job;
    grpc::Status s = admin_->GetJob(&context, r, &job);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND);
    EXPECT_THAT(s.error_message(), HasSubstr("job-9999"));
  }
  {
    grpc::ClientContext context;
    SetDeadline(&context, 10);
    v1::CancelJobRequest r;
    r.set_job_id("job-9999");
    v1::Job job;
    EXPECT_EQ(admin_->CancelJob(&context, r, &job).error_code(), grpc::StatusCode::NOT_FOUND);
  }
  {
    grpc::ClientContext context;
    SetDeadline(&context, 10);
    v1::WatchJobRequest r;
    r.set_job_id("job-9999");
    auto reader = admin_->WatchJob(&context, r);
    v1::JobEvent e;
    EXPECT_FALSE(reader->Read(&e));
    grpc::Status s = reader->Finish();
    EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND);
    EXPECT_THAT(s.error_message(), HasSubstr("job-9999"));
  }
  {
    grpc::ClientContext context;
    SetDeadline(&context, 10);
    v1::SampleRequest r;
    r.set_job_id("job-9999");
    v1::SampleResponse response;
    EXPECT_EQ(admin_->Sample(&context, r, &response).error_code(), grpc::StatusCode::NOT_FOUND);
  }
}

TEST_F(ProtocolTest, SecondLiveWorkerWithTheSameSupervisorIdIsRefused) {
  auto first = Connect("node-7");
  v1::ShepherdMessage m;
  ASSERT_TRUE(first->ReadNext(&m));
  ASSERT_TRUE(m.has_join_ack());
  EXPECT_FALSE(m.join_ack().has_rejection());
  EXPECT_EQ(m.join_ack().heartbeat_interval_ms(), 100u);

  auto second = Connect("node-7");
  ASSERT_TRUE(second->ReadNext(&m));
  ASSERT_TRUE(m.has_join_ack());
  EXPECT_EQ(m.join_ack().rejection().code(), static_cast<int>(absl::StatusCode::kAlreadyExists));
  absl::Status end = second->Finish();
  EXPECT_EQ(end.code(), absl::StatusCode::kAlreadyExists) << end;
  EXPECT_THAT(std::string(end.message()), HasSubstr("supervisor id 'node-7' is already used by a live worker"));

  // The first stream is undisturbed: it keeps getting heartbeats and is listed as connected.
  v1::WorkerMessage hb;
  hb.mutable_heartbeat()->mutable_heartbeat()->set_sequence(1);
  ASSERT_TRUE(first->Write(hb));
  ASSERT_TRUE(first->stream()->Read(&m));
  EXPECT_TRUE(m.has_heartbeat());
  grpc::ClientContext context;
  SetDeadline(&context, 10);
  v1::ListWorkersResponse workers;
  ASSERT_TRUE(admin_->ListWorkers(&context, v1::ListWorkersRequest(), &workers).ok());
  ASSERT_EQ(workers.workers_size(), 1);
  EXPECT_EQ(workers.workers(0).supervisor_id(), "node-7");
  EXPECT_TRUE(workers.workers(0).worker_connected());
  first->context().TryCancel();
}

TEST_F(ProtocolTest, ANewerIncarnationReplacesTheOldStream) {
  auto first = Connect("node-8", 1);
  v1::ShepherdMessage m;
  ASSERT_TRUE(first->ReadNext(&m) && m.has_join_ack());
  auto second = Connect("node-8", 2);
  ASSERT_TRUE(second->ReadNext(&m) && m.has_join_ack());
  EXPECT_FALSE(m.join_ack().has_rejection());
  absl::Status end = first->Finish();
  EXPECT_EQ(end.code(), absl::StatusCode::kAborted) << end;
  EXPECT_THAT(std::string(end.message()), HasSubstr("incarnation 2"));
  second->context().TryCancel();
}

TEST_F(ProtocolTest, ProtocolViolationsEndOnlyTheOffendingStream) {
  {  // Not a Join first.
    grpc::ClientContext context;
    SetDeadline(&context, 10);
    auto stream = training_->Connect(&context);
    v1::WorkerMessage m;
    m.mutable_heartbeat()->mutable_heartbeat()->set_sequence(1);
    ASSERT_TRUE(stream->Write(m));
    v1::ShepherdMessage in;
    EXPECT_FALSE(stream->Read(&in));
    grpc::Status s = stream->Finish();
    EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
    EXPECT_THAT(s.error_message(), HasSubstr("must be a Join"));
  }
  {  // A bad supervisor id.
    auto w = Connect("bad id!");
    absl::Status end = w->Finish();
    EXPECT_EQ(end.code(), absl::StatusCode::kInvalidArgument) << end;
    EXPECT_THAT(std::string(end.message()), HasSubstr("supervisor_id 'bad id!'"));
  }
  {  // A result chunk with no round running.
    auto w = Connect("node-9");
    v1::ShepherdMessage in;
    ASSERT_TRUE(w->ReadNext(&in) && in.has_join_ack());
    v1::WorkerMessage m;
    m.mutable_result_chunk()->set_round(3);
    ASSERT_TRUE(w->Write(m));
    absl::Status end = w->Finish();
    EXPECT_EQ(end.code(), absl::StatusCode::kInvalidArgument) << end;
    EXPECT_THAT(std::string(end.message()), HasSubstr("result chunk for round 3, but no round is running"));
  }
}

TEST_F(ProtocolTest, DeltaOfTheWrongShapeIsRejectedByName) {
  ASSERT_TRUE(Submit(TinyJobYaml(), "tiny.yaml").ok());
  auto w = Connect("node-1");
  v1::Assignment assignment;
  const uint64_t round = RunToStartRound(w.get(), &assignment);
  ASSERT_EQ(round, 1u);
  ASSERT_GT(assignment.parameters_size(), 0);
  EXPECT_EQ(assignment.parameters(0).name(), "transformer.wte.weight");
  // Δ for tensor 0 with the wrong shape.
  std::string data(64 * 32 * 4, '\0');
  v1::WorkerMessage m;
  v1::TensorChunk* c = m.mutable_result_chunk()->mutable_chunk();
  m.mutable_result_chunk()->set_round(round);
  c->set_name("transformer.wte.weight");
  c->set_index(0);
  c->set_count(static_cast<uint32_t>(assignment.parameters_size()));
  c->set_dtype(v1::DTYPE_F32);
  c->add_shape(64);
  c->add_shape(32);
  c->set_total_bytes(data.size());
  c->set_data(data);
  c->set_crc32c(Crc32c(data));
  c->set_tensor_crc32c(Crc32c(data));
  ASSERT_TRUE(w->Write(m));
  absl::Status end = w->Finish();
  EXPECT_EQ(end.code(), absl::StatusCode::kInvalidArgument) << end;
  EXPECT_THAT(std::string(end.message()), HasSubstr("result for round 1"));
  EXPECT_THAT(std::string(end.message()), HasSubstr("transformer.wte.weight"));
  EXPECT_THAT(std::string(end.message()), HasSubstr("f32[65x32]"));
  // The job is not disturbed: still running, waiting for workers.
  EXPECT_EQ(GetJob("job-0001").state(), v1::JOB_STATE_RUNNING);
}

TEST_F(ProtocolTest, OversizedChunkIsRejected) {
  ASSERT_TRUE(Submit(TinyJobYaml(), "tiny.yaml").ok());
  auto w = Connect("node-2");
  v1::Assignment assignment;
  const uint64_t round = RunToStartRound(w.get(), &assignment);
  ASSERT_EQ(round, 1u);
  std::string data((1 << 20) + 1, 'x');
  v1::WorkerMessage m;
  m.mutable_result_chunk()->set_round(round);
  v1::TensorChunk* c = m.mutable_result_chunk()->mutable_chunk();
  c->set_name("transformer.wte.weight");
  c->set_count(static_cast<uint32_t>(assignment.parameters_size()));
  c->set_dtype(v1::DTYPE_F32);
  c->add_shape(65);
  c->add_shape(32);
  c->set_total_bytes(65 * 32 * 4);
  c->set_data(data);
  c->set_crc32c(Crc32c(data));
  ASSERT_TRUE(w->Write(m));
  absl::Status end = w->Finish();
  EXPECT_EQ(end.code(), absl::StatusCode::kInvalidArgument) << end;
  EXPECT_THAT(std::string(end.message()), HasSubstr("transformer.wte.weight"));
  EXPECT_EQ(GetJob("job-0001").state(), v1::JOB_STATE_RUNNING);
}

TEST_F(ProtocolTest, SilentWorkerIsDeclaredDeadWithinTheHeartbeatTimeout) {
  auto w = Connect("node-3");
  v1::ShepherdMessage m;
  ASSERT_TRUE(w->ReadNext(&m) && m.has_join_ack());
  const auto t0 = std::chrono::steady_clock::now();
  // Send nothing more: the shepherd must end the stream after ~600 ms of silence.
  absl::Status end = w->Finish();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(end.code(), absl::StatusCode::kUnavailable) << end;
  EXPECT_THAT(std::string(end.message()), HasSubstr("no message from worker 'node-3'"));
  EXPECT_LT(seconds, 3.0);
  std::printf("silent worker detected after %.2f s (timeout 0.6 s)\n", seconds);
  grpc::ClientContext context;
  SetDeadline(&context, 10);
  v1::ListWorkersResponse workers;
  ASSERT_TRUE(admin_->ListWorkers(&context, v1::ListWorkersRequest(), &workers).ok());
  ASSERT_EQ(workers.workers_size(), 1);
  EXPECT_FALSE(workers.workers(0).worker_connected());
}

// A worker busy taking θ from a saturated shepherd (hundreds of streams on few cores) may have
// its heartbeats read late; the θ it takes shows it alive. This one asks for θ₀ in full (it does
// not draw it), sends no heartbeat at all and takes a 9.5M-parameter θ (38 MB) a chunk every
// 40 ms, well past the 0.6 s timeout once the socket buffers and HTTP/2 window are full; then,
// silent and taking nothing, it is dead.
TEST_F(ProtocolTest, AWorkerTakingThetaIsAliveWithoutHeartbeats) {
  std::string yaml = TinyJobYaml();
  ASSERT_TRUE(absl::StrContains(yaml, "n_layer: 2\n") && absl::StrContains(yaml, "n_embd: 32\n"));
  absl::StrReplaceAll({{"n_layer: 2\n", "n_layer: 3\n"}, {"n_embd: 32\n", "n_embd: 512\n"}}, &yaml);
  ASSERT_TRUE(Submit(yaml, "wide.yaml").ok());
  auto w = Connect("node-1");
  ASSERT_TRUE(w->ExpectJoinAck());
  w->StartHeartbeats(std::chrono::milliseconds(100));  // while the job is prepared
  v1::Assignment assignment;
  ASSERT_TRUE(w->TakeAssignment(&assignment));
  // θ₀ is the worker's to draw (Assignment.init): StartRound 1 comes with nothing before it.
  EXPECT_EQ(assignment.init().params_size(), assignment.parameters_size());
  v1::ShepherdMessage first;
  ASSERT_TRUE(w->ReadNext(&first) && first.has_start_round());
  EXPECT_TRUE(first.start_round().theta_from_init());
  w->StopHeartbeats();
  // This worker cannot draw it and asks for θ in full.
  v1::WorkerMessage resync;
  resync.mutable_resync()->set_round(1);
  resync.mutable_resync()->set_reason("no draw here");
  ASSERT_TRUE(w->Write(resync));
  const auto t0 = std::chrono::steady_clock::now();
  const uint64_t round = w->NextStartRound(nullptr, std::chrono::milliseconds(40));
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("took θ for %.2f s without a heartbeat (timeout 0.6 s)\n", seconds);
  ASSERT_EQ(round, 1u) << "the stream ended while the worker was taking θ";
  EXPECT_GT(seconds, 1.2);  // the slow reading outlasted the timeout twice
  absl::Status end = w->Finish();
  EXPECT_EQ(end.code(), absl::StatusCode::kUnavailable) << end;
  EXPECT_THAT(std::string(end.message()), HasSubstr("no message from worker 'node-1'"));
}

// A rolling upgrade: a worker older than StartRound.theta_from_init (its Join declares no
// WORKER_FEATURE_THETA_FROM_INIT) would wait for a θ₀ that never comes; it is sent θ₀ in full
// before StartRound 1, and the StartRound does not ask it to draw.
TEST_F(ProtocolTest, AWorkerWithoutTheThetaFromInitFeatureIsSentThetaInFull) {
  ASSERT_TRUE(Submit(TinyJobYaml(), "tiny.yaml").ok());
  auto w = Connect("node-1", 1, /*features=*/{});
  ASSERT_TRUE(w->ExpectJoinAck());
  w->StartHeartbeats(std::chrono::milliseconds(100));
  v1::Assignment assignment;
  ASSERT_TRUE(w->TakeAssignment(&assignment));
  int chunks = 0;
  std::set<std::string> names;
  v1::ShepherdMessage m;
  while (w->ReadNext(&m) && m.has_parameter_chunk()) {
    ++chunks;
    names.insert(m.parameter_chunk().chunk().name());
  }
  ASSERT_TRUE(m.has_start_round()) << m.DebugString();
  EXPECT_EQ(m.start_round().round(), 1u);
  EXPECT_FALSE(m.start_round().theta_from_init());
  EXPECT_GT(chunks, 0);
  EXPECT_EQ(names.size(), static_cast<size_t>(assignment.parameters_size()));  // every tensor of θ₀
  std::printf("older worker: θ₀ in %d chunks (%zu tensors) before StartRound 1\n", chunks, names.size());
}

TEST_F(ProtocolTest, RestartedShepherdKeepsEveryAcceptedJob) {
  ASSERT_TRUE(Submit(TinyJobYaml(), "tiny.yaml").ok());
  ASSERT_TRUE(Submit(TinyJobYaml(), "tiny.yaml").ok());
  {
    grpc::ClientContext context;
    SetDeadline(&context, 10);
    v1::CancelJobRequest r;
    r.set_job_id("job-0002");
    r.set_reason("changed my mind");
    v1::Job job;
    ASSERT_TRUE(admin_->CancelJob(&context, r, &job).ok());
    EXPECT_EQ(job.state(), v1::JOB_STATE_CANCELLED);
  }
  shepherd_->Shutdown();
  shepherd_.reset();
  StartShepherd();
  EXPECT_EQ(GetJob("job-0001").state(), v1::JOB_STATE_RUNNING);  // resumes (no worker yet)
  v1::Job cancelled = GetJob("job-0002");
  EXPECT_EQ(cancelled.state(), v1::JOB_STATE_CANCELLED);
  EXPECT_EQ(cancelled.reason(), "changed my mind");
  absl::StatusOr<v1::SubmitJobResponse> third = Submit(TinyJobYaml(), "tiny.yaml");
  ASSERT_TRUE(third.ok());
  EXPECT_EQ(third->job_id(), "job-0003");
  EXPECT_EQ(third->queue_position(), 1u);
}

TEST_F(ProtocolTest, ShutdownIsPromptWithAnOpenWatch) {
  ASSERT_TRUE(Submit(TinyJobYaml(), "tiny.yaml").ok());
  grpc::ClientContext context;
  SetDeadline(&context, 30);
  v1::WatchJobRequest r;
  r.set_job_id("job-0001");
  auto reader = admin_->WatchJob(&context, r);
  v1::JobEvent e;
  ASSERT_TRUE(reader->Read(&e));
  EXPECT_TRUE(e.has_snapshot());
  const auto t0 = std::chrono::steady_clock::now();
  shepherd_->Shutdown();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(seconds, 3.0);
  while (reader->Read(&e)) {
  }
  grpc::Status s = reader->Finish();
  EXPECT_FALSE(s.ok());
}

}  // namespace
}  // namespace pcp::shepherd

// A WatchJob client that stops reading is dropped once max_watch_queue events wait for it,
// instead of growing the shepherd's memory (issue 10). The Admin service runs in-process on
// loopback over a real JobManager; the job's events are checkpoint notices of 100 KB each, so
// that HTTP/2 flow control stops the writes after a few of them.
#include <grpcpp/grpcpp.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "admin_service.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "pcp/base/file.h"
#include "process_harness.h"

namespace pcp::shepherd {
namespace {

TEST(AdminWatchTest, AWatcherThatDoesNotReadIsDropped) {
  absl::StatusOr<testing::TempDir> dir = testing::TempDir::Create("pcp-admin-watch");
  ASSERT_TRUE(dir.ok()) << dir.status();
  AdmissionPolicy policy;
  policy.data_roots = *DataRoots::Confined({DefaultDataRoot()});
  absl::StatusOr<std::unique_ptr<JobManager>> jobs = JobManager::Open(dir->path(), policy);
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  v1::SubmitJobRequest submit;
  const std::string jobs_dir = std::string(PCP_SOURCE_DIR) + "/config/jobs";
  submit.set_yaml(*ReadFile(jobs_dir + "/tiny.yaml"));
  submit.set_base_dir(jobs_dir);
  ASSERT_TRUE((*jobs)->Submit(submit).ok());
  ASSERT_TRUE((*jobs)->StartNext().has_value());

  ShepherdConfig config;
  config.max_watch_queue = 4;
  BlockingPool pool(1);
  AdminService admin(AdminService::Deps{.jobs = jobs->get(), .pool = &pool, .config = &config});
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(&admin);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  ASSERT_NE(server, nullptr);

  grpc::ChannelArguments args;
  args.SetInt(GRPC_ARG_HTTP2_BDP_PROBE, 0);  // a fixed receive window: the writes stall
  auto channel = grpc::CreateCustomChannel(absl::StrCat("127.0.0.1:", port), grpc::InsecureChannelCredentials(), args);
  std::unique_ptr<v1::Admin::Stub> stub = v1::Admin::NewStub(channel);
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(120));
  v1::WatchJobRequest request;
  request.set_job_id("job-0001");
  std::unique_ptr<grpc::ClientReader<v1::JobEvent>> reader = stub->WatchJob(&context, request);
  v1::JobEvent event;
  ASSERT_TRUE(reader->Read(&event));  // the snapshot: the watch is registered
  ASSERT_TRUE(event.has_snapshot());

  // 200 events of 100 KB, none read: far more than any flow-control window holds.
  const std::string long_path(100 * 1024, 'p');
  for (int round = 1; round <= 200; ++round) (*jobs)->ReportCheckpoint("job-0001", round, long_path);

  int received = 0;
  while (reader->Read(&event)) ++received;
  grpc::Status status = reader->Finish();
  EXPECT_FALSE(status.ok());
  EXPECT_LT(received, 200) << "the watcher was never dropped";
  std::printf("silent watcher dropped after %d of 200 events reached it: %s %s\n", received,
              status.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED ? "RESOURCE_EXHAUSTED" : "CANCELLED",
              status.error_message().c_str());

  // The service serves on.
  grpc::ClientContext again;
  again.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  std::unique_ptr<grpc::ClientReader<v1::JobEvent>> second = stub->WatchJob(&again, request);
  ASSERT_TRUE(second->Read(&event));
  EXPECT_TRUE(event.has_snapshot());
  again.TryCancel();
  while (second->Read(&event)) {
  }
  second->Finish();
  admin.EndStreams(absl::UnavailableError("test over"));
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(5));
}

}  // namespace
}  // namespace pcp::shepherd

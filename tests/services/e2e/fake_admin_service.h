// Test-only stand-in for the shepherd's Admin service, with canned, deterministic answers:
// it lets pcpctl and the reflection client be tested without a cluster. It trains nothing;
// the real service is tested end to end in e2e_cluster_test and fault_test.
//
//   FakeAdminService admin;
//   grpc::ServerBuilder builder;
//   builder.RegisterService(&admin);
//
// Behaviour:
// - SubmitJob: a line starting with "bogus" is an "unknown key" error naming
//   FILE:LINE:1 (INVALID_ARGUMENT); empty YAML is INVALID_ARGUMENT too. Otherwise the job
//   is queued as "job-0001", "job-0002", ... named by its "name:" line (or "job").
// - WatchJob streams a snapshot, queued -> running, `rounds` progress events (loss falling),
//   a checkpoint and a result: COMPLETED, or FAILED for a job whose name contains "fail",
//   CANCELLED for one cancelled before it is watched.
// - ListWorkers: two workers, "node-a" (connected, training) and "node-b" (supervisor only,
//   worker in backoff). RestartWorker / DrainWorker: OK for those two, NOT_FOUND otherwise.
// - GetJobHistory: `history_rounds` records per known job (round r: train loss 3 - r/1000,
//   tokens 1000 r, val loss every 10th round), paged as the real service pages.
// - Unknown job ids: NOT_FOUND naming the id.
#ifndef PCP_TESTS_SERVICES_E2E_FAKE_ADMIN_SERVICE_H_
#define PCP_TESTS_SERVICES_E2E_FAKE_ADMIN_SERVICE_H_

#include <map>
#include <mutex>
#include <string>

#include "pcp/v1/admin.grpc.pb.h"

namespace pcp::testing {

class FakeAdminService final : public v1::Admin::Service {
 public:
  // Progress events per WatchJob stream.
  explicit FakeAdminService(int rounds = 5, int history_rounds = 2500)
      : rounds_(rounds), history_rounds_(history_rounds) {}

  grpc::Status SubmitJob(grpc::ServerContext*, const v1::SubmitJobRequest*, v1::SubmitJobResponse*) override;
  grpc::Status ListJobs(grpc::ServerContext*, const v1::ListJobsRequest*, v1::ListJobsResponse*) override;
  grpc::Status GetJob(grpc::ServerContext*, const v1::GetJobRequest*, v1::Job*) override;
  grpc::Status CancelJob(grpc::ServerContext*, const v1::CancelJobRequest*, v1::Job*) override;
  grpc::Status WatchJob(grpc::ServerContext*, const v1::WatchJobRequest*, grpc::ServerWriter<v1::JobEvent>*) override;
  grpc::Status ListWorkers(grpc::ServerContext*, const v1::ListWorkersRequest*, v1::ListWorkersResponse*) override;
  grpc::Status RestartWorker(grpc::ServerContext*, const v1::WorkerCommandRequest*,
                             v1::WorkerCommandResponse*) override;
  grpc::Status DrainWorker(grpc::ServerContext*, const v1::WorkerCommandRequest*, v1::WorkerCommandResponse*) override;
  grpc::Status GetCluster(grpc::ServerContext*, const v1::GetClusterRequest*, v1::Cluster*) override;
  grpc::Status Sample(grpc::ServerContext*, const v1::SampleRequest*, v1::SampleResponse*) override;
  grpc::Status GetJobHistory(grpc::ServerContext*, const v1::GetJobHistoryRequest*,
                             v1::GetJobHistoryResponse*) override;

  // The last SubmitJobRequest received (for assertions on what a client sent).
  v1::SubmitJobRequest last_submit() const;

 private:
  grpc::Status WorkerCommand(const v1::WorkerCommandRequest& request, v1::WorkerCommandResponse* response);

  const int rounds_;
  const int history_rounds_;
  mutable std::mutex mu_;
  std::map<std::string, v1::Job> jobs_;
  int next_job_ = 1;
  uint64_t next_command_ = 1;
  v1::SubmitJobRequest last_submit_;
};

}  // namespace pcp::testing

#endif  // PCP_TESTS_SERVICES_E2E_FAKE_ADMIN_SERVICE_H_

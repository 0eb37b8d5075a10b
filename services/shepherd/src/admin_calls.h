// Private: the Admin service's request handling without gRPC: each call takes its request
// and returns its response or an error Status. The handlers in admin_service.cc add what
// belongs to the RPC (authorization, the limit on calls in flight, running SubmitJob and
// Sample on the BlockingPool, WatchJob's stream, the supervisors' asynchronous answers) and
// call these; the admin_requests fuzz target calls them directly.
//
//   AdminCalls calls({.jobs = jobs, .registry = &registry, .coordinator = &coordinator,
//                     .config = &config, .started_unix_ms = now});
//   absl::StatusOr<v1::SubmitJobResponse> r = calls.SubmitJob(request);   // reads the job's data
//   v1::Cluster cluster = calls.GetCluster();
//
// Thread-safe (as the parts in Deps are). SubmitJob and Sample may block (file reads, the
// model); the others answer from memory.
#ifndef PCP_SHEPHERD_SRC_ADMIN_CALLS_H_
#define PCP_SHEPHERD_SRC_ADMIN_CALLS_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "blocking_pool.h"
#include "coordinator.h"
#include "pcp/shepherd/job_manager.h"
#include "pcp/shepherd/shepherd_config.h"
#include "pcp/v1/admin.pb.h"
#include "supervisor_directory.h"
#include "worker_registry.h"

namespace pcp::shepherd {

// What the Admin service works with. Not owned; each must outlive the service.
struct AdminDeps {
  JobManager* jobs = nullptr;
  WorkerRegistry* registry = nullptr;
  Coordinator* coordinator = nullptr;
  BlockingPool* pool = nullptr;  // the service's blocking calls run here (not used by AdminCalls)
  const ShepherdConfig* config = nullptr;
  int64_t started_unix_ms = 0;
  SupervisorDirectory* supervisors = nullptr;  // may be null
};

class AdminCalls {
 public:
  explicit AdminCalls(AdminDeps deps) : d_(deps) {}

  // Validates (YAML, data, memory) and queues: JobManager::Submit.
  absl::StatusOr<v1::SubmitJobResponse> SubmitJob(const v1::SubmitJobRequest& request) const;
  v1::ListJobsResponse ListJobs(const v1::ListJobsRequest& request) const;
  absl::StatusOr<v1::Job> GetJob(const v1::GetJobRequest& request) const;
  absl::StatusOr<v1::Job> CancelJob(const v1::CancelJobRequest& request) const;
  absl::StatusOr<v1::GetJobHistoryResponse> GetJobHistory(const v1::GetJobHistoryRequest& request) const;
  // The workers' slots merged with the supervisors' state, by supervisor id.
  v1::ListWorkersResponse ListWorkers(const v1::ListWorkersRequest& request) const;
  // Whether RestartWorker / DrainWorker may go to the supervisors: UNIMPLEMENTED without a
  // SupervisorDirectory, INVALID_ARGUMENT without a supervisor id.
  absl::Status CheckCommand(SupervisorCommand command, const v1::WorkerCommandRequest& request) const;
  v1::Cluster GetCluster(const v1::GetClusterRequest& request) const;
  // Text from the running job's θ, or a checkpoint's (FAILED_PRECONDITION when there is none).
  // An exception out of the model fails the call, not the process.
  absl::StatusOr<v1::SampleResponse> Sample(const v1::SampleRequest& request) const;

 private:
  AdminDeps d_;
};

}  // namespace pcp::shepherd

#endif  // PCP_SHEPHERD_SRC_ADMIN_CALLS_H_

// Private: the Admin service (callback API); what each call does is in admin_calls.h, the
// handlers add authorization, limits and threads. Quick calls answer inline from in-memory state;
// SubmitJob (reads the job's data) and Sample (runs the model) run on a BlockingPool;
// WatchJob is a write reactor fed by JobManager events; RestartWorker / DrainWorker go to the
// supervisors through a SupervisorDirectory (UNIMPLEMENTED when there is none).
// Bounded (config: max_admin_calls, max_watch_streams, max_watch_queue): calls in flight and
// open watches past their limit get RESOURCE_EXHAUSTED; a watcher that falls max_watch_queue
// events behind is dropped.
//
//   AdminService admin({.jobs = jobs, .registry = &registry, .coordinator = &coordinator,
//                       .pool = &pool, .config = &config, .started_unix_ms = now});
//   builder.RegisterService(&admin);
#ifndef PCP_SHEPHERD_SRC_ADMIN_SERVICE_H_
#define PCP_SHEPHERD_SRC_ADMIN_SERVICE_H_

#include <atomic>

#include "admin_calls.h"
#include "pcp/v1/admin.grpc.pb.h"

namespace pcp::shepherd {

struct WatchRegistry;

class AdminService final : public v1::Admin::CallbackService {
 public:
  using Deps = AdminDeps;
  explicit AdminService(Deps deps);
  ~AdminService() override;

  // Ends every WatchJob stream with `why` (before Server::Shutdown, which would otherwise
  // wait for them until its deadline).
  void EndStreams(const absl::Status& why);

  grpc::ServerUnaryReactor* SubmitJob(grpc::CallbackServerContext* context, const v1::SubmitJobRequest* request,
                                      v1::SubmitJobResponse* response) override;
  grpc::ServerUnaryReactor* ListJobs(grpc::CallbackServerContext* context, const v1::ListJobsRequest* request,
                                     v1::ListJobsResponse* response) override;
  grpc::ServerUnaryReactor* GetJob(grpc::CallbackServerContext* context, const v1::GetJobRequest* request,
                                   v1::Job* response) override;
  grpc::ServerUnaryReactor* CancelJob(grpc::CallbackServerContext* context, const v1::CancelJobRequest* request,
                                      v1::Job* response) override;
  grpc::ServerWriteReactor<v1::JobEvent>* WatchJob(grpc::CallbackServerContext* context,
                                                   const v1::WatchJobRequest* request) override;
  grpc::ServerUnaryReactor* ListWorkers(grpc::CallbackServerContext* context, const v1::ListWorkersRequest* request,
                                        v1::ListWorkersResponse* response) override;
  grpc::ServerUnaryReactor* RestartWorker(grpc::CallbackServerContext* context, const v1::WorkerCommandRequest* request,
                                          v1::WorkerCommandResponse* response) override;
  grpc::ServerUnaryReactor* DrainWorker(grpc::CallbackServerContext* context, const v1::WorkerCommandRequest* request,
                                        v1::WorkerCommandResponse* response) override;
  grpc::ServerUnaryReactor* GetCluster(grpc::CallbackServerContext* context, const v1::GetClusterRequest* request,
                                       v1::Cluster* response) override;
  grpc::ServerUnaryReactor* Sample(grpc::CallbackServerContext* context, const v1::SampleRequest* request,
                                   v1::SampleResponse* response) override;
  grpc::ServerUnaryReactor* GetJobHistory(grpc::CallbackServerContext* context, const v1::GetJobHistoryRequest* request,
                                          v1::GetJobHistoryResponse* response) override;

 private:
  grpc::ServerUnaryReactor* Command(SupervisorCommand command, grpc::CallbackServerContext* context,
                                    const v1::WorkerCommandRequest* request, v1::WorkerCommandResponse* response);
  // Calls that outlive their handler (SubmitJob, Sample, RestartWorker, DrainWorker) count as
  // in flight from Enter to Leave; past max_admin_calls, Enter is false and Busy answers
  // RESOURCE_EXHAUSTED. (The other calls answer inline and hold nothing.)
  bool Enter();
  void Leave();
  grpc::ServerUnaryReactor* Busy(grpc::CallbackServerContext* context);
  Deps d_;
  AdminCalls calls_;  // the handlers' logic, without gRPC
  std::atomic<int64_t> in_flight_{0};
  std::unique_ptr<WatchRegistry> watches_;
};

}  // namespace pcp::shepherd

#endif  // PCP_SHEPHERD_SRC_ADMIN_SERVICE_H_

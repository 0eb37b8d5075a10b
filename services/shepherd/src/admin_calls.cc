#include "admin_calls.h"

#include <map>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "contain.h"
#include "pcp/base/absl_fmt.h"
#include "sampling.h"
#include "spdlog/spdlog.h"

namespace pcp::shepherd {

absl::StatusOr<v1::SubmitJobResponse> AdminCalls::SubmitJob(const v1::SubmitJobRequest& request) const {
  absl::StatusOr<v1::SubmitJobResponse> r = d_.jobs->Submit(request);
  if (!r.ok()) spdlog::info("SubmitJob rejected: {}", r.status().message());
  return r;
}

v1::ListJobsResponse AdminCalls::ListJobs(const v1::ListJobsRequest& request) const {
  v1::ListJobsResponse response;
  for (v1::Job& job : d_.jobs->List(request)) *response.add_jobs() = std::move(job);
  return response;
}

absl::StatusOr<v1::Job> AdminCalls::GetJob(const v1::GetJobRequest& request) const {
  return d_.jobs->Get(request.job_id());
}

absl::StatusOr<v1::Job> AdminCalls::CancelJob(const v1::CancelJobRequest& request) const {
  return d_.jobs->Cancel(request.job_id(), request.reason());
}

absl::StatusOr<v1::GetJobHistoryResponse> AdminCalls::GetJobHistory(const v1::GetJobHistoryRequest& request) const {
  return d_.jobs->History(request);
}

v1::ListWorkersResponse AdminCalls::ListWorkers(const v1::ListWorkersRequest&) const {
  std::map<std::string, v1::WorkerInfo> by_id;
  for (v1::WorkerInfo& w : d_.registry->List()) {
    const std::string id = w.supervisor_id();
    by_id[id] = std::move(w);
  }
  if (d_.supervisors != nullptr) {
    for (const SupervisorDirectory::Supervisor& s : d_.supervisors->List()) {
      v1::WorkerInfo& w = by_id[s.supervisor_id];
      w.set_supervisor_id(s.supervisor_id);
      if (w.host().empty()) w.set_host(s.host);
      w.set_supervisor_connected(s.connected);
      *w.mutable_process() = s.process;
    }
  }
  v1::ListWorkersResponse response;
  for (auto& [id, w] : by_id) *response.add_workers() = std::move(w);
  return response;
}

absl::Status AdminCalls::CheckCommand(SupervisorCommand command, const v1::WorkerCommandRequest& request) const {
  const char* name = command == SupervisorCommand::kRestart ? "RestartWorker" : "DrainWorker";
  if (d_.supervisors == nullptr) {
    return absl::UnimplementedError(
        absl::StrCat(name, ": this shepherd has no Control service (supervisors cannot be reached)"));
  }
  if (request.supervisor_id().empty()) {
    return absl::InvalidArgumentError(absl::StrCat(name, ": supervisor_id is required"));
  }
  return absl::OkStatus();
}

v1::Cluster AdminCalls::GetCluster(const v1::GetClusterRequest&) const {
  const JobCounts counts = d_.jobs->Counts();
  const Coordinator::Status status = d_.coordinator->status();
  v1::Cluster response;
  response.set_shepherd_version(PCP_VERSION);
  response.set_started_unix_ms(d_.started_unix_ms);
  response.set_state_dir(d_.config->state_dir);
  uint32_t supervisors = 0;
  if (d_.supervisors != nullptr) {
    for (const auto& s : d_.supervisors->List()) supervisors += s.connected ? 1 : 0;
  }
  response.set_supervisors_connected(supervisors);
  response.set_workers_connected(d_.registry->connected());
  response.set_workers_in_round(status.workers_in_round);
  response.set_active_job_id(counts.running_id);
  response.set_jobs_queued(counts.queued);
  response.set_jobs_completed(counts.completed);
  response.set_jobs_failed(counts.failed);
  response.set_jobs_cancelled(counts.cancelled);
  return response;
}

absl::StatusOr<v1::SampleResponse> AdminCalls::Sample(const v1::SampleRequest& request) const {
  auto run = [&]() -> absl::StatusOr<v1::SampleResponse> {
    std::string job_id = request.job_id();
    if (job_id.empty()) job_id = d_.jobs->Counts().running_id;
    if (job_id.empty()) job_id = d_.jobs->LatestFinishedJob();
    if (job_id.empty()) return absl::FailedPreconditionError("no job has run yet: nothing to sample from");
    absl::StatusOr<v1::Job> job = d_.jobs->Get(job_id);
    if (!job.ok()) return job.status();
    std::shared_ptr<const ParamsSnapshot> snap = d_.coordinator->snapshot();
    if (snap == nullptr || snap->job_id != job_id) {
      if (job->checkpoint_path().empty()) {
        return absl::FailedPreconditionError(
            absl::StrCat("job ", job_id, " has no parameters to sample from yet (no round completed)"));
      }
      absl::StatusOr<std::shared_ptr<const ParamsSnapshot>> loaded =
          SnapshotFromCheckpoint(job_id, job->checkpoint_path(), job->state() == v1::JOB_STATE_COMPLETED);
      if (!loaded.ok()) return loaded.status();
      snap = *std::move(loaded);
    }
    return SampleText(*snap, request, static_cast<int>(d_.config->eval_threads));
  };
  return Contain(run);
}

}  // namespace pcp::shepherd

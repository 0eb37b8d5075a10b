#include "fake_admin_service.h"

#include <cmath>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"

namespace pcp::testing {
namespace {

grpc::Status NoSuchJob(const std::string& id) {
  return grpc::Status(grpc::StatusCode::NOT_FOUND, absl::StrCat("no job '", id, "'"));
}

bool Finished(v1::JobState state) {
  return state == v1::JOB_STATE_COMPLETED || state == v1::JOB_STATE_FAILED || state == v1::JOB_STATE_CANCELLED;
}

}  // namespace

grpc::Status FakeAdminService::SubmitJob(grpc::ServerContext*, const v1::SubmitJobRequest* request,
                                         v1::SubmitJobResponse* response) {
  std::lock_guard<std::mutex> lock(mu_);
  last_submit_ = *request;
  std::string file = request->file_name().empty() ? "job.yaml" : request->file_name();
  if (request->yaml().empty()) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, absl::StrCat(file, ":1:1: empty job file"));
  }
  std::string name = "job";
  int line_number = 0;
  for (absl::string_view line : absl::StrSplit(request->yaml(), '\n')) {
    ++line_number;
    if (absl::StartsWith(line, "bogus")) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                          absl::StrCat(file, ":", line_number, ":1: unknown key 'bogus'"));
    }
    if (absl::ConsumePrefix(&line, "name:")) name = std::string(absl::StripAsciiWhitespace(line));
  }
  v1::Job job;
  job.set_job_id(absl::StrFormat("job-%04d", next_job_++));
  job.set_name(name);
  job.set_state(v1::JOB_STATE_QUEUED);
  job.set_submitted_unix_ms(absl::ToUnixMillis(absl::Now()));
  job.mutable_progress()->set_total_rounds(static_cast<uint64_t>(rounds_));
  job.mutable_progress()->set_inner_steps(10);
  job.set_effective_yaml(request->yaml());
  int ahead = 0;
  for (const auto& [id, other] : jobs_) ahead += Finished(other.state()) ? 0 : 1;
  jobs_[job.job_id()] = job;
  response->set_job_id(job.job_id());
  response->set_name(name);
  response->set_queue_position(static_cast<uint32_t>(ahead));
  return grpc::Status::OK;
}

grpc::Status FakeAdminService::ListJobs(grpc::ServerContext*, const v1::ListJobsRequest* request,
                                        v1::ListJobsResponse* response) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = jobs_.rbegin(); it != jobs_.rend(); ++it) {  // ids sort by age: newest first
    if (request->limit() != 0 && response->jobs_size() >= static_cast<int>(request->limit())) break;
    v1::Job* job = response->add_jobs();
    *job = it->second;
    job->clear_effective_yaml();
  }
  return grpc::Status::OK;
}

grpc::Status FakeAdminService::GetJob(grpc::ServerContext*, const v1::GetJobRequest* request, v1::Job* job) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = jobs_.find(request->job_id());
  if (it == jobs_.end()) return NoSuchJob(request->job_id());
  *job = it->second;
  return grpc::Status::OK;
}

grpc::Status FakeAdminService::CancelJob(grpc::ServerContext*, const v1::CancelJobRequest* request, v1::Job* job) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = jobs_.find(request->job_id());
  if (it == jobs_.end()) return NoSuchJob(request->job_id());
  if (Finished(it->second.state())) {
    return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                        absl::StrCat(request->job_id(), " has already finished"));
  }
  it->second.set_state(v1::JOB_STATE_CANCELLED);
  it->second.set_reason(request->reason().empty() ? "cancelled" : request->reason());
  *job = it->second;
  return grpc::Status::OK;
}

grpc::Status FakeAdminService::WatchJob(grpc::ServerContext*, const v1::WatchJobRequest* request,
                                        grpc::ServerWriter<v1::JobEvent>* writer) {
  v1::Job job;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = jobs_.find(request->job_id());
    if (it == jobs_.end()) return NoSuchJob(request->job_id());
    job = it->second;
  }
  auto event = [&job] {
    v1::JobEvent e;
    e.set_job_id(job.job_id());
    e.set_time_unix_ms(absl::ToUnixMillis(absl::Now()));
    return e;
  };
  v1::JobEvent snapshot = event();
  *snapshot.mutable_snapshot() = job;
  writer->Write(snapshot);
  v1::JobResult result;
  if (job.state() == v1::JOB_STATE_CANCELLED) {
    result.set_state(v1::JOB_STATE_CANCELLED);
    result.set_reason(job.reason());
  } else {
    v1::JobEvent running = event();
    running.mutable_state_change()->set_from(v1::JOB_STATE_QUEUED);
    running.mutable_state_change()->set_to(v1::JOB_STATE_RUNNING);
    writer->Write(running);
    v1::JobProgress progress = job.progress();
    for (int round = 1; round <= rounds_; ++round) {
      progress.set_round(static_cast<uint64_t>(round));
      progress.set_train_loss(4.0 / std::sqrt(static_cast<double>(round)));
      progress.set_val_loss(4.1 / std::sqrt(static_cast<double>(round)));
      progress.set_val_round(static_cast<uint64_t>(round));
      progress.set_tokens_processed(static_cast<uint64_t>(round) * 2560);
      progress.set_tokens_per_second(12345.0);
      progress.set_round_time_s(0.2);
      progress.set_eta_s(0.2 * (rounds_ - round));
      progress.set_workers_in_last_round(2);
      v1::JobEvent e = event();
      *e.mutable_progress() = progress;
      writer->Write(e);
    }
    std::string checkpoint = absl::StrCat("/state/jobs/", job.job_id(), "/ckpt.safetensors");
    v1::JobEvent ckpt = event();
    ckpt.mutable_checkpoint()->set_round(static_cast<uint64_t>(rounds_));
    ckpt.mutable_checkpoint()->set_path(checkpoint);
    writer->Write(ckpt);
    bool fail = absl::StrContains(job.name(), "fail");
    result.set_state(fail ? v1::JOB_STATE_FAILED : v1::JOB_STATE_COMPLETED);
    if (fail) result.set_reason("worker error: out of memory");
    result.set_rounds_completed(static_cast<uint64_t>(rounds_));
    result.set_final_train_loss(progress.train_loss());
    result.set_final_val_loss(progress.val_loss());
    result.set_checkpoint_path(checkpoint);
    result.set_duration_s(0.2 * rounds_);
    result.set_tokens_processed(progress.tokens_processed());
    std::lock_guard<std::mutex> lock(mu_);
    v1::Job& stored = jobs_[job.job_id()];
    stored.set_state(result.state());
    stored.set_reason(result.reason());
    *stored.mutable_progress() = progress;
    stored.set_checkpoint_path(checkpoint);
  }
  v1::JobEvent end = event();
  *end.mutable_result() = result;
  writer->Write(end);
  return grpc::Status::OK;
}

grpc::Status FakeAdminService::ListWorkers(grpc::ServerContext*, const v1::ListWorkersRequest*,
                                           v1::ListWorkersResponse* response) {
  v1::WorkerInfo* a = response->add_workers();
  a->set_supervisor_id("node-a");
  a->set_host("host-a");
  a->set_worker_connected(true);
  a->set_supervisor_connected(true);
  a->set_backend(v1::BACKEND_CPU);
  a->set_phase(v1::WORKER_PHASE_TRAINING);
  a->mutable_process()->set_state(v1::WORKER_PROCESS_STATE_RUNNING);
  a->mutable_process()->set_pid(4242);
  a->set_job_id("job-0001");
  a->set_round(3);
  a->set_rounds_completed(2);
  a->set_tokens_per_second(6000);
  a->set_last_seen_ms(250);
  v1::WorkerInfo* b = response->add_workers();
  b->set_supervisor_id("node-b");
  b->set_host("host-b");
  b->set_supervisor_connected(true);
  b->mutable_process()->set_state(v1::WORKER_PROCESS_STATE_BACKOFF);
  b->mutable_process()->set_restarts(3);
  b->set_last_seen_ms(5000);
  return grpc::Status::OK;
}

grpc::Status FakeAdminService::WorkerCommand(const v1::WorkerCommandRequest& request,
                                             v1::WorkerCommandResponse* response) {
  if (request.supervisor_id() != "node-a" && request.supervisor_id() != "node-b") {
    return grpc::Status(grpc::StatusCode::NOT_FOUND, absl::StrCat("no supervisor '", request.supervisor_id(), "'"));
  }
  std::lock_guard<std::mutex> lock(mu_);
  response->set_command_id(next_command_++);
  response->set_code(0);
  response->set_message(absl::StrCat("done (", request.reason(), ")"));
  return grpc::Status::OK;
}

grpc::Status FakeAdminService::RestartWorker(grpc::ServerContext*, const v1::WorkerCommandRequest* request,
                                             v1::WorkerCommandResponse* response) {
  return WorkerCommand(*request, response);
}

grpc::Status FakeAdminService::DrainWorker(grpc::ServerContext*, const v1::WorkerCommandRequest* request,
                                           v1::WorkerCommandResponse* response) {
  return WorkerCommand(*request, response);
}

grpc::Status FakeAdminService::GetCluster(grpc::ServerContext*, const v1::GetClusterRequest*, v1::Cluster* cluster) {
  std::lock_guard<std::mutex> lock(mu_);
  cluster->set_shepherd_version("fake-0");
  cluster->set_started_unix_ms(absl::ToUnixMillis(absl::Now()) - 65000);
  cluster->set_state_dir("/state");
  cluster->set_supervisors_connected(2);
  cluster->set_workers_connected(1);
  for (const auto& [id, job] : jobs_) {
    if (job.state() == v1::JOB_STATE_QUEUED) cluster->set_jobs_queued(cluster->jobs_queued() + 1);
    if (job.state() == v1::JOB_STATE_COMPLETED) cluster->set_jobs_completed(cluster->jobs_completed() + 1);
  }
  return grpc::Status::OK;
}

grpc::Status FakeAdminService::Sample(grpc::ServerContext*, const v1::SampleRequest* request,
                                      v1::SampleResponse* response) {
  std::lock_guard<std::mutex> lock(mu_);
  std::string id = request->job_id();
  if (id.empty() && !jobs_.empty()) id = jobs_.rbegin()->first;
  if (jobs_.count(id) == 0) return NoSuchJob(id);
  uint32_t n = request->max_new_tokens() == 0 ? 5 : request->max_new_tokens();
  response->set_text(std::string(n, 'a'));
  response->set_job_id(id);
  response->set_round(static_cast<uint64_t>(rounds_));
  response->set_final_parameters(true);
  response->set_tokens_generated(n);
  return grpc::Status::OK;
}

v1::SubmitJobRequest FakeAdminService::last_submit() const {
  std::lock_guard<std::mutex> lock(mu_);
  return last_submit_;
}

grpc::Status FakeAdminService::GetJobHistory(grpc::ServerContext*, const v1::GetJobHistoryRequest* request,
                                             v1::GetJobHistoryResponse* response) {
  std::lock_guard<std::mutex> lock(mu_);
  if (jobs_.count(request->job_id()) == 0) return NoSuchJob(request->job_id());
  const uint64_t limit = request->limit() == 0 ? 1000 : request->limit();
  const auto last = static_cast<uint64_t>(history_rounds_);
  uint64_t r = request->after_round() + 1;
  for (; r <= last && static_cast<uint64_t>(response->records_size()) < limit; ++r) {
    v1::RoundRecord* rec = response->add_records();
    rec->set_round(r);
    rec->set_tokens(1000);
    rec->set_tokens_total(1000 * r);
    rec->set_train_loss(3.0 - static_cast<double>(r) / 1000.0);
    if (r % 10 == 0) rec->set_val_loss(3.1 - static_cast<double>(r) / 1000.0);
    rec->add_participants("node-a");
    rec->set_rounds_since_previous(1);
  }
  response->set_next_after_round(r <= last ? r - 1 : 0);
  response->set_total_records(last);
  response->set_max_records(last);
  return grpc::Status::OK;
}

}  // namespace pcp::testing

#include "admin_service.h"

#include <atomic>
#include <chrono>
#include <deque>
#include <memory>
#include <mutex>
#include <set>

#include "absl/strings/str_cat.h"
#include "pcp/auth/authorization.h"
#include "pcp/auth/refused_reactor.h"
#include "pcp/metrics/registry.h"
#include "pcp/rpc/grpc_status.h"
#include "spdlog/spdlog.h"

namespace pcp::shepherd {

namespace {

grpc::ServerUnaryReactor* Done(grpc::CallbackServerContext* context, const absl::Status& status) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(ToGrpcStatus(status));
  return reactor;
}

// The call finished with the authorization interceptor's refusal, or null when the caller
// may go on (roles per method: method_roles.cc).
grpc::ServerUnaryReactor* Refused(grpc::CallbackServerContext* context) {
  absl::Status refused = auth::CallerOf(context).status();
  return refused.ok() ? nullptr : Done(context, refused);
}

}  // namespace

// WatchJob: the snapshot, then events as JobManager emits them, and last the result. Events
// are queued here and written one at a time. The JobManager callback holds a shared State,
// never the reactor itself, so an event racing with the end of the call finds the reactor
// gone instead of freed.
class WatchReactor;

struct WatchState {
  std::mutex mu;
  WatchReactor* reactor = nullptr;
  grpc::CallbackServerContext* context = nullptr;
  size_t max_queue = 256;
  // Held while cancelling the call from outside gRPC (Push) and by OnDone before the reactor
  // (and its context) go away. Taken before `mu`, never while holding it; OnCancel (which
  // TryCancel may run inline) does not take it.
  std::mutex cancel_mu;
  grpc::Status end_status = grpc::Status(grpc::StatusCode::CANCELLED, "watch cancelled");
  std::deque<v1::JobEvent> queue;
  v1::JobEvent current;
  bool ready = false;  // the snapshot is queued: writing may begin
  bool writing = false, broken = false, finished = false;
};

// The live watches, so that a shutdown can end them at once.
struct WatchRegistry {
  std::mutex mu;
  std::set<std::shared_ptr<WatchState>> live;
  size_t max_live = 64;
};

class WatchReactor final : public grpc::ServerWriteReactor<v1::JobEvent> {
 public:
  using State = WatchState;
  using Registry = WatchRegistry;

  WatchReactor(JobManager* jobs, Registry* registry, grpc::CallbackServerContext* context, size_t max_queue,
               const std::string& job_id)
      : jobs_(jobs), registry_(registry), state_(std::make_shared<State>()) {
    state_->reactor = this;
    state_->context = context;
    state_->max_queue = max_queue;
    bool full = false;
    {
      std::lock_guard<std::mutex> lock(registry_->mu);
      full = registry_->live.size() >= registry_->max_live;
      if (!full) registry_->live.insert(state_);
    }
    if (full) {
      metrics::Get(metrics::kShepherdAdmissionRefusalsTotal, {"watch_streams"}).Increment();
      Finish(grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                          absl::StrCat(registry_->max_live,
                                       " WatchJob streams are open, the most this shepherd "
                                       "serves (max_watch_streams); retry later")));
      return;
    }
    std::weak_ptr<State> weak = state_;
    absl::StatusOr<JobManager::WatchStart> start = jobs_->Watch(job_id, [weak](const v1::JobEvent& e) {
      if (std::shared_ptr<State> s = weak.lock()) Push(s, e);
    });
    if (!start.ok()) {
      Finish(ToGrpcStatus(start.status()));
      return;
    }
    watch_id_ = start->watch_id;
    v1::JobEvent snapshot;
    snapshot.set_job_id(job_id);
    snapshot.set_time_unix_ms(
        std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
            .count());
    *snapshot.mutable_snapshot() = start->snapshot;
    {
      std::lock_guard<std::mutex> lock(state_->mu);
      state_->queue.push_front(std::move(snapshot));  // before any event the watch delivered
      if (start->result.has_value()) {
        v1::JobEvent result;
        result.set_job_id(job_id);
        *result.mutable_result() = *start->result;
        state_->queue.push_back(std::move(result));
      }
      state_->ready = true;
    }
    Pump(state_);
  }

  void OnWriteDone(bool ok) override {
    {
      std::lock_guard<std::mutex> lock(state_->mu);
      state_->writing = false;
      if (!ok) state_->broken = true;
    }
    Pump(state_);
  }
  void OnCancel() override {
    {
      std::lock_guard<std::mutex> lock(state_->mu);
      state_->broken = true;
    }
    Pump(state_);
  }
  void OnDone() override {
    if (watch_id_ != 0) jobs_->Unwatch(watch_id_);
    {
      std::lock_guard<std::mutex> lock(registry_->mu);
      registry_->live.erase(state_);
    }
    {
      std::lock_guard<std::mutex> cancel(state_->cancel_mu);
      std::lock_guard<std::mutex> lock(state_->mu);
      state_->reactor = nullptr;
    }
    delete this;
  }

  // Ends the watch with `status` once the write in flight (if any) is done.
  static void End(const std::shared_ptr<State>& s, const grpc::Status& status) {
    {
      std::lock_guard<std::mutex> lock(s->mu);
      s->broken = true;
      s->end_status = status;
    }
    Pump(s);
  }

  static void Push(const std::shared_ptr<State>& s, const v1::JobEvent& e) {
    grpc::CallbackServerContext* drop = nullptr;
    {
      std::lock_guard<std::mutex> lock(s->mu);
      if (s->reactor == nullptr || s->finished || s->broken) return;
      if (s->queue.size() >= s->max_queue) {
        // A watcher that does not read must not grow the shepherd: it is dropped. Cancelling
        // ends the write in flight (which a silent client never completes), then Pump finishes.
        s->queue.clear();
        s->broken = true;
        s->end_status = grpc::Status(grpc::StatusCode::RESOURCE_EXHAUSTED,
                                     absl::StrCat("the watcher fell ", s->max_queue,
                                                  " events behind (max_watch_queue); watch again"));
        drop = s->context;
      } else {
        s->queue.push_back(e);
      }
    }
    if (drop != nullptr) {
      metrics::Get(metrics::kShepherdAdmissionRefusalsTotal, {"watch_queue"}).Increment();
      std::lock_guard<std::mutex> cancel(s->cancel_mu);
      bool live = false;
      {
        std::lock_guard<std::mutex> lock(s->mu);
        live = s->reactor != nullptr;
      }
      if (live) drop->TryCancel();
    }
    Pump(s);
  }

  // Starts the next write, or Finish after the result (or when the client is gone).
  static void Pump(const std::shared_ptr<State>& s) {
    WatchReactor* reactor = nullptr;
    bool finish = false;
    grpc::Status status;
    {
      std::lock_guard<std::mutex> lock(s->mu);
      if (s->reactor == nullptr || !s->ready || s->writing || s->finished) return;
      if (s->broken) {
        finish = true;
        status = s->end_status;
      } else if (!s->queue.empty()) {
        if (s->current.has_result()) {
          finish = true;  // the result was the last event
        } else {
          s->current = std::move(s->queue.front());
          s->queue.pop_front();
          s->writing = true;
        }
      } else if (s->current.has_result()) {
        finish = true;
      } else {
        return;
      }
      if (finish) s->finished = true;
      reactor = s->reactor;
    }
    if (finish) {
      reactor->Finish(status);
    } else {
      reactor->StartWrite(&s->current);
    }
  }

  JobManager* jobs_;
  Registry* registry_;
  std::shared_ptr<State> state_;
  int64_t watch_id_ = 0;
};

grpc::ServerUnaryReactor* AdminService::SubmitJob(grpc::CallbackServerContext* context,
                                                  const v1::SubmitJobRequest* request,
                                                  v1::SubmitJobResponse* response) {
  if (grpc::ServerUnaryReactor* refused = Refused(context)) return refused;
  if (!Enter()) return Busy(context);
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  // Validation reads the job's data: off the gRPC thread.
  d_.pool->Run([this, reactor, request, response] {
    absl::StatusOr<v1::SubmitJobResponse> r = calls_.SubmitJob(*request);
    if (r.ok()) *response = *std::move(r);
    Leave();
    reactor->Finish(ToGrpcStatus(r.status()));
  });
  return reactor;
}

grpc::ServerUnaryReactor* AdminService::ListJobs(grpc::CallbackServerContext* context,
                                                 const v1::ListJobsRequest* request, v1::ListJobsResponse* response) {
  if (grpc::ServerUnaryReactor* refused = Refused(context)) return refused;
  *response = calls_.ListJobs(*request);
  return Done(context, absl::OkStatus());
}

grpc::ServerUnaryReactor* AdminService::GetJob(grpc::CallbackServerContext* context, const v1::GetJobRequest* request,
                                               v1::Job* response) {
  if (grpc::ServerUnaryReactor* refused = Refused(context)) return refused;
  absl::StatusOr<v1::Job> job = calls_.GetJob(*request);
  if (job.ok()) *response = *std::move(job);
  return Done(context, job.status());
}

grpc::ServerUnaryReactor* AdminService::CancelJob(grpc::CallbackServerContext* context,
                                                  const v1::CancelJobRequest* request, v1::Job* response) {
  if (grpc::ServerUnaryReactor* refused = Refused(context)) return refused;
  absl::StatusOr<v1::Job> job = calls_.CancelJob(*request);
  if (job.ok()) *response = *std::move(job);
  return Done(context, job.status());
}

grpc::ServerUnaryReactor* AdminService::GetJobHistory(grpc::CallbackServerContext* context,
                                                      const v1::GetJobHistoryRequest* request,
                                                      v1::GetJobHistoryResponse* response) {
  if (grpc::ServerUnaryReactor* refused = Refused(context)) return refused;
  absl::StatusOr<v1::GetJobHistoryResponse> history = calls_.GetJobHistory(*request);
  if (history.ok()) *response = *std::move(history);
  return Done(context, history.status());
}

grpc::ServerWriteReactor<v1::JobEvent>* AdminService::WatchJob(grpc::CallbackServerContext* context,
                                                               const v1::WatchJobRequest* request) {
  if (absl::Status refused = auth::CallerOf(context).status(); !refused.ok()) {
    return new auth::RefusedWriteReactor<v1::JobEvent>(refused);
  }
  return new WatchReactor(d_.jobs, watches_.get(), context, static_cast<size_t>(d_.config->max_watch_queue),
                          request->job_id());
}

AdminService::AdminService(Deps deps) : d_(deps), calls_(deps), watches_(std::make_unique<WatchRegistry>()) {
  watches_->max_live = static_cast<size_t>(d_.config->max_watch_streams);
}

bool AdminService::Enter() {
  if (in_flight_.fetch_add(1) < d_.config->max_admin_calls) return true;
  in_flight_.fetch_sub(1);
  metrics::Get(metrics::kShepherdAdmissionRefusalsTotal, {"admin_calls"}).Increment();
  return false;
}

void AdminService::Leave() { in_flight_.fetch_sub(1); }

grpc::ServerUnaryReactor* AdminService::Busy(grpc::CallbackServerContext* context) {
  return Done(context, absl::ResourceExhaustedError(absl::StrCat(
                           d_.config->max_admin_calls,
                           " Admin calls are in flight, the most this shepherd takes (max_admin_calls); retry later")));
}
AdminService::~AdminService() = default;

void AdminService::EndStreams(const absl::Status& why) {
  std::vector<std::shared_ptr<WatchState>> live;
  {
    std::lock_guard<std::mutex> lock(watches_->mu);
    live.assign(watches_->live.begin(), watches_->live.end());
  }
  for (auto& s : live) WatchReactor::End(s, ToGrpcStatus(why));
}

grpc::ServerUnaryReactor* AdminService::ListWorkers(grpc::CallbackServerContext* context,
                                                    const v1::ListWorkersRequest* request,
                                                    v1::ListWorkersResponse* response) {
  if (grpc::ServerUnaryReactor* refused = Refused(context)) return refused;
  *response = calls_.ListWorkers(*request);
  return Done(context, absl::OkStatus());
}

grpc::ServerUnaryReactor* AdminService::Command(SupervisorCommand command, grpc::CallbackServerContext* context,
                                                const v1::WorkerCommandRequest* request,
                                                v1::WorkerCommandResponse* response) {
  if (grpc::ServerUnaryReactor* refused = Refused(context)) return refused;
  if (absl::Status checked = calls_.CheckCommand(command, *request); !checked.ok()) return Done(context, checked);
  const char* name = command == SupervisorCommand::kRestart ? "RestartWorker" : "DrainWorker";
  if (!Enter()) return Busy(context);
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  spdlog::info("{} {} requested{}", name, request->supervisor_id(),
               request->reason().empty() ? "" : absl::StrCat(": ", request->reason()));
  d_.supervisors->Command(command, *request, context->deadline(),
                          [this, reactor, response](absl::StatusOr<v1::WorkerCommandResponse> r) {
                            if (r.ok()) *response = *std::move(r);
                            Leave();
                            reactor->Finish(ToGrpcStatus(r.status()));
                          });
  return reactor;
}

grpc::ServerUnaryReactor* AdminService::RestartWorker(grpc::CallbackServerContext* context,
                                                      const v1::WorkerCommandRequest* request,
                                                      v1::WorkerCommandResponse* response) {
  return Command(SupervisorCommand::kRestart, context, request, response);
}

grpc::ServerUnaryReactor* AdminService::DrainWorker(grpc::CallbackServerContext* context,
                                                    const v1::WorkerCommandRequest* request,
                                                    v1::WorkerCommandResponse* response) {
  return Command(SupervisorCommand::kDrain, context, request, response);
}

grpc::ServerUnaryReactor* AdminService::GetCluster(grpc::CallbackServerContext* context,
                                                   const v1::GetClusterRequest* request, v1::Cluster* response) {
  if (grpc::ServerUnaryReactor* refused = Refused(context)) return refused;
  *response = calls_.GetCluster(*request);
  return Done(context, absl::OkStatus());
}

grpc::ServerUnaryReactor* AdminService::Sample(grpc::CallbackServerContext* context, const v1::SampleRequest* request,
                                               v1::SampleResponse* response) {
  if (grpc::ServerUnaryReactor* refused = Refused(context)) return refused;
  if (!Enter()) return Busy(context);
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  d_.pool->Run([this, reactor, request, response] {
    absl::StatusOr<v1::SampleResponse> r = calls_.Sample(*request);
    if (r.ok()) *response = *std::move(r);
    Leave();
    reactor->Finish(ToGrpcStatus(r.status()));
  });
  return reactor;
}

}  // namespace pcp::shepherd

// The shepherd's Admin request handling, driven through the real call logic
// (services/shepherd/src/admin_calls.h, what the gRPC handlers run once the authorization
// interceptor let the caller in) on a real JobManager in a fresh state folder, from bytes:
// the input is a sequence of calls, each a method byte, a 2-byte little-endian length and
// the serialized request. SubmitJob's YAML goes through the real parsing, data checks (the
// data roots hold one text file, d.txt, the default base_dir) and memory admission (4 GiB a
// worker, 8 GiB the shepherd), into a queue of at most 4 jobs (8 kept). Two more "methods"
// play the coordinator: start the next job, and finish the running one (state from the
// request's first byte).
//
// Not reached: Sample past its checks (no job here has parameters), WatchJob's stream, and
// the supervisors' answers to RestartWorker / DrainWorker (the asynchronous part).
//
// Whatever the bytes: no crash; a submitted job is then found, queued, under its name; a
// cancelled job is CANCELLED; GetCluster's counts match ListJobs; and after a "restart" (a
// second JobManager on the same folder) every job is still there in the same state.
#include <unistd.h>

#include <filesystem>
#include <map>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "admin_calls.h"
#include "fuzz_chunks.h"
#include "fuzz_target.h"
#include "pcp/base/file.h"
#include "spdlog/spdlog.h"

namespace {

namespace fs = std::filesystem;
using pcp::shepherd::AdminCalls;
using pcp::shepherd::JobManager;

enum Method {
  kSubmitJob,
  kListJobs,
  kGetJob,
  kCancelJob,
  kGetJobHistory,
  kListWorkers,
  kRestartWorker,
  kDrainWorker,
  kGetCluster,
  kSample,
  kStartNext,
  kFinish,
  kNumMethods
};

struct Dirs {
  std::string data;   // the data root, with d.txt
  std::string state;  // the shepherd's state folder, fresh for every input
};

const Dirs& Folders() {
  static const Dirs* dirs = [] {
    // tmpfs where there is one: every submission is persisted with fsync.
    const fs::path base = fs::exists("/dev/shm") ? fs::path("/dev/shm") : fs::temp_directory_path();
    const std::string tag = absl::StrCat("pcp-admin-fuzz-", getpid());
    auto* d = new Dirs{(base / (tag + "-data")).string(), (base / (tag + "-state")).string()};
    fs::create_directories(d->data);
    std::string text;
    for (int i = 0; i < 200; ++i) text += "the quick brown fox jumps over the lazy dog. ";
    PCP_FUZZ_CHECK(pcp::WriteFileAtomic(d->data + "/d.txt", text).ok());
    std::atexit([] {
      std::error_code ec;
      fs::remove_all(Folders().data, ec);
      fs::remove_all(Folders().state, ec);
    });
    return d;
  }();
  return *dirs;
}

pcp::shepherd::AdmissionPolicy Policy() {
  pcp::shepherd::AdmissionPolicy policy;
  absl::StatusOr<pcp::DataRoots> roots = pcp::DataRoots::Confined({Folders().data});
  PCP_FUZZ_CHECK(roots.ok());
  policy.data_roots = *std::move(roots);
  policy.budgets = {.worker_bytes = int64_t{4} << 30, .shepherd_bytes = int64_t{8} << 30};
  policy.max_jobs = 8;
  policy.max_queued_jobs = 4;
  return policy;
}

// A supervisor directory with one connected supervisor (ListWorkers merges it in).
class Supervisors final : public pcp::shepherd::SupervisorDirectory {
 public:
  void Command(pcp::shepherd::SupervisorCommand, const pcp::v1::WorkerCommandRequest&,
               std::chrono::system_clock::time_point,
               std::function<void(absl::StatusOr<pcp::v1::WorkerCommandResponse>)> done) override {
    done(absl::UnavailableError("not connected"));
  }
  std::vector<Supervisor> List() const override {
    Supervisor s{.supervisor_id = "node-1", .host = "gpu-7", .connected = true, .process = {}};
    return {s};
  }
};

template <typename Request>
Request Parse(absl::string_view bytes) {
  Request r;
  if (!r.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) r.Clear();
  return r;
}

std::map<std::string, pcp::v1::JobState> States(const JobManager& jobs) {
  std::map<std::string, pcp::v1::JobState> states;
  for (const pcp::v1::Job& job : jobs.List({})) states[job.job_id()] = job.state();
  return states;
}

void Call(Method method, absl::string_view bytes, JobManager& jobs, const AdminCalls& calls) {
  switch (method) {
    case kSubmitJob: {
      auto request = Parse<pcp::v1::SubmitJobRequest>(bytes);
      if (request.base_dir().empty()) request.set_base_dir(Folders().data);
      absl::StatusOr<pcp::v1::SubmitJobResponse> r = calls.SubmitJob(request);
      if (r.ok()) {
        pcp::v1::GetJobRequest get;
        get.set_job_id(r->job_id());
        absl::StatusOr<pcp::v1::Job> job = calls.GetJob(get);
        PCP_FUZZ_CHECK(job.ok());
        PCP_FUZZ_CHECK(job->state() == pcp::v1::JOB_STATE_QUEUED);
        PCP_FUZZ_CHECK(job->name() == r->name());
      }
      break;
    }
    case kListJobs: {
      const auto request = Parse<pcp::v1::ListJobsRequest>(bytes);
      const pcp::v1::ListJobsResponse r = calls.ListJobs(request);
      PCP_FUZZ_CHECK(r.jobs_size() <= 8);
      if (request.limit() > 0) PCP_FUZZ_CHECK(r.jobs_size() <= static_cast<int>(request.limit()));
      break;
    }
    case kGetJob: (void)calls.GetJob(Parse<pcp::v1::GetJobRequest>(bytes)); break;
    case kCancelJob: {
      absl::StatusOr<pcp::v1::Job> job = calls.CancelJob(Parse<pcp::v1::CancelJobRequest>(bytes));
      if (job.ok()) PCP_FUZZ_CHECK(job->state() == pcp::v1::JOB_STATE_CANCELLED);
      break;
    }
    case kGetJobHistory: (void)calls.GetJobHistory(Parse<pcp::v1::GetJobHistoryRequest>(bytes)); break;
    case kListWorkers: PCP_FUZZ_CHECK(calls.ListWorkers({}).workers_size() == 1); break;
    case kRestartWorker:
    case kDrainWorker: {
      const auto request = Parse<pcp::v1::WorkerCommandRequest>(bytes);
      const absl::Status s = calls.CheckCommand(method == kRestartWorker ? pcp::shepherd::SupervisorCommand::kRestart
                                                                         : pcp::shepherd::SupervisorCommand::kDrain,
                                                request);
      PCP_FUZZ_CHECK(s.ok() == !request.supervisor_id().empty());
      break;
    }
    case kGetCluster: {
      const pcp::v1::Cluster cluster = calls.GetCluster({});
      uint32_t queued = 0, completed = 0, failed = 0, cancelled = 0;
      std::string running;
      for (const auto& [id, state] : States(jobs)) {
        queued += state == pcp::v1::JOB_STATE_QUEUED;
        completed += state == pcp::v1::JOB_STATE_COMPLETED;
        failed += state == pcp::v1::JOB_STATE_FAILED;
        cancelled += state == pcp::v1::JOB_STATE_CANCELLED;
        if (state == pcp::v1::JOB_STATE_RUNNING) running = id;
      }
      PCP_FUZZ_CHECK(cluster.jobs_queued() == queued && cluster.jobs_completed() == completed &&
                     cluster.jobs_failed() == failed && cluster.jobs_cancelled() == cancelled);
      PCP_FUZZ_CHECK(cluster.active_job_id() == running);
      PCP_FUZZ_CHECK(cluster.supervisors_connected() == 1);
      break;
    }
    case kSample: (void)calls.Sample(Parse<pcp::v1::SampleRequest>(bytes)); break;
    case kStartNext:
      if (std::optional<pcp::shepherd::RunnableJob> job = jobs.StartNext()) {
        PCP_FUZZ_CHECK(jobs.IsRunning(job->id));
      }
      break;
    case kFinish: {
      const std::string running = jobs.Counts().running_id;
      if (running.empty()) break;
      const uint8_t pick = bytes.empty() ? 0 : static_cast<uint8_t>(bytes[0]) % 3;
      const pcp::v1::JobState state = pick == 0   ? pcp::v1::JOB_STATE_COMPLETED
                                      : pick == 1 ? pcp::v1::JOB_STATE_FAILED
                                                  : pcp::v1::JOB_STATE_CANCELLED;
      PCP_FUZZ_CHECK(jobs.Finish(running, state, "fuzz"));
      break;
    }
    case kNumMethods: break;
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  pcp::fuzz::QuietProtobuf();
  spdlog::set_level(spdlog::level::off);  // every rejected submission is logged
  Folders();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const Dirs& dirs = Folders();
  std::error_code ec;
  fs::remove_all(dirs.state, ec);
  absl::StatusOr<std::unique_ptr<JobManager>> jobs = JobManager::Open(dirs.state, Policy());
  PCP_FUZZ_CHECK(jobs.ok());
  pcp::shepherd::ShepherdConfig config;
  config.state_dir = dirs.state;
  {
    pcp::shepherd::WorkerRegistry registry(pcp::shepherd::SessionOptions{}, 3.0, 1.0);
    pcp::shepherd::Coordinator coordinator(&config, jobs->get(), &registry);  // not started
    Supervisors supervisors;
    const AdminCalls calls({.jobs = jobs->get(),
                            .registry = &registry,
                            .coordinator = &coordinator,
                            .config = &config,
                            .started_unix_ms = 1,
                            .supervisors = &supervisors});
    for (int calls_made = 0; size >= 3 && calls_made < 32; ++calls_made) {
      const Method method = static_cast<Method>(data[0] % kNumMethods);
      const size_t n = std::min<size_t>(size - 3, data[1] | (size_t{data[2]} << 8));
      Call(method, pcp::fuzz::AsText(data + 3, n), **jobs, calls);
      data += 3 + n;
      size -= 3 + n;
    }
  }

  // A restart finds every job as it was.
  const std::map<std::string, pcp::v1::JobState> before = States(**jobs);
  jobs->reset();
  absl::StatusOr<std::unique_ptr<JobManager>> reopened = JobManager::Open(dirs.state, Policy());
  PCP_FUZZ_CHECK(reopened.ok());
  PCP_FUZZ_CHECK(States(**reopened) == before);
  return 0;
}

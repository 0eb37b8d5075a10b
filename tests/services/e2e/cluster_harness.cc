#include "cluster_harness.h"

#include <sys/wait.h>

#include <filesystem>
#include <regex>
#include <utility>

#include <grpcpp/grpcpp.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "pcp/base/file.h"
#include "pcp/base/status_macros.h"
#include "pcp/loadgen/proc_stats.h"
#include "pcp/testing/metrics_scrape.h"

namespace pcp::testing {
namespace {

bool Finished(v1::JobState state) {
  return state == v1::JOB_STATE_COMPLETED || state == v1::JOB_STATE_FAILED || state == v1::JOB_STATE_CANCELLED;
}

}  // namespace

absl::Time LogLineTime(const std::string& line, absl::Time fallback) {
  if (line.size() < 23) return fallback;
  absl::Time t;
  std::string error;
  if (!absl::ParseTime("%Y-%m-%d %H:%M:%E3S", line.substr(0, 23), absl::LocalTimeZone(), &t, &error)) {
    return fallback;
  }
  return t;
}

std::vector<RoundLine> RoundsFromLog(const std::string& log, const std::string& job_id) {
  std::regex line("job " + job_id + R"(: round (\d+)/\d+ complete: (\d+) workers \(.*\), train loss ([0-9.]+))");
  std::vector<RoundLine> rounds;
  for (auto it = std::sregex_iterator(log.begin(), log.end(), line); it != std::sregex_iterator(); ++it) {
    rounds.push_back({std::stoi((*it)[1].str()), std::stoi((*it)[2].str()), std::stod((*it)[3].str())});
  }
  return rounds;
}

void SetDeadline(grpc::ClientContext* context, absl::Duration timeout) {
  context->set_deadline(absl::ToChronoTime(absl::Now() + timeout));
}

ClusterHarness::ClusterHarness(std::string dir)
    : dir_(std::move(dir)), port_(PickFreePort()), metrics_port_(PickFreePort()) {
  target_ = absl::StrCat("127.0.0.1:", port_);
  std::filesystem::create_directories(log_dir());
  std::filesystem::create_directories(job_dir());
}

ClusterHarness::~ClusterHarness() { (void)StopAll(); }

void ClusterHarness::SetSecurity(ClusterSecurity security) {
  security_ = std::move(security);
  admin_.reset();
  channel_.reset();
}

std::string ClusterHarness::supervisor_id(int i) const { return absl::StrCat("node-", i + 1); }

absl::Status ClusterHarness::StartShepherd() {
  if (shepherd_ != nullptr) {
    if (shepherd_->Running()) return absl::FailedPreconditionError("the shepherd is already running");
    dead_.push_back(std::move(shepherd_));
  }
  ++shepherd_starts_;
  std::vector<std::string> args = {absl::StrCat("--listen=", target_),
                                   absl::StrCat("--state_dir=", state_dir()),
                                   "--heartbeat_interval_ms=250",
                                   "--heartbeat_timeout_ms=1500",
                                   "--round_start_grace_ms=1000",
                                   "--eval_threads=1",
                                   absl::StrCat("--metrics_listen=127.0.0.1:", metrics_port_)};
  args.insert(args.end(), shepherd_flags_.begin(), shepherd_flags_.end());
  if (!security_.shepherd_yaml.empty()) {
    const std::string config = absl::StrCat(dir_, "/shepherd.yaml");
    if (absl::Status s = WriteFileAtomic(config, security_.shepherd_yaml); !s.ok()) return s;
    args.push_back(absl::StrCat("--config=", config));
  }
  absl::StatusOr<std::unique_ptr<Process>> started =
      Process::Start({.binary = PCP_SHEPHERD_BINARY,
                      .args = std::move(args),
                      .log_path = absl::StrCat(log_dir(), "/shepherd-", shepherd_starts_, ".log")});
  if (!started.ok()) return started.status();
  shepherd_ = *std::move(started);
  pids_seen_.insert(shepherd_->pid());
  absl::StatusOr<std::string> line = shepherd_->WaitForLog("listening on", absl::Seconds(60));
  if (!line.ok()) return line.status();
  // Serving for real: an Admin call answers.
  absl::Time deadline = absl::Now() + absl::Seconds(30);
  while (true) {
    grpc::ClientContext context;
    SetDeadline(&context, absl::Seconds(2));
    v1::Cluster cluster;
    grpc::Status status = admin().GetCluster(&context, v1::GetClusterRequest(), &cluster);
    if (status.ok()) return absl::OkStatus();
    if (absl::Now() > deadline) {
      return absl::DeadlineExceededError(absl::StrCat("the shepherd does not answer GetCluster: ",
                                                      status.error_message(), "\n", shepherd_->LogTail()));
    }
    absl::SleepFor(absl::Milliseconds(100));
  }
}

absl::Status ClusterHarness::StartSupervisors(int n, const std::string& backend, const std::string& worker_args) {
  if (std::string(PCP_SUPERVISOR_BINARY).empty() || std::string(PCP_WORKER_BINARY).empty()) {
    return absl::FailedPreconditionError("pcp-supervisor / pcp-worker are not built in this tree");
  }
  for (int k = 0; k < n; ++k) {
    int i = static_cast<int>(supervisors_.size());
    std::string state = absl::StrCat(dir_, "/supervisor-", i + 1);
    std::filesystem::create_directories(state);
    supervisor_metrics_ports_.push_back(PickFreePort());
    worker_metrics_ports_.push_back(PickFreePort());
    std::vector<std::string> args = {absl::StrCat("--shepherd=", target_),
                                     absl::StrCat("--supervisor_id=", supervisor_id(i)),
                                     absl::StrCat("--state_dir=", state),
                                     absl::StrCat("--worker_binary=", PCP_WORKER_BINARY),
                                     absl::StrCat("--worker_args=--backend=", backend,
                                                  ",--threads=1,--backoff_initial_ms=200,--backoff_max_ms=2000",
                                                  ",--metrics_listen=127.0.0.1:", worker_metrics_ports_[i],
                                                  worker_args.empty() ? "" : ",", worker_args),
                                     absl::StrCat("--metrics_listen=127.0.0.1:", supervisor_metrics_ports_[i]),
                                     "--backoff_initial_ms=200",
                                     "--backoff_max_ms=2000",
                                     "--reconnect_initial_ms=100",
                                     "--reconnect_max_ms=1000",
                                     "--grace_ms=10000",
                                     "--worker_grace_ms=5000"};
    if (security_.supervisor_args) {
      for (std::string& a : security_.supervisor_args(i)) args.push_back(std::move(a));
    }
    absl::StatusOr<std::unique_ptr<Process>> started =
        Process::Start({.binary = PCP_SUPERVISOR_BINARY,
                        .args = args,
                        .log_path = absl::StrCat(log_dir(), "/", supervisor_id(i), ".log")});
    if (!started.ok()) return started.status();
    pids_seen_.insert((*started)->pid());
    supervisors_.push_back(*std::move(started));
  }
  return absl::OkStatus();
}

absl::Status ClusterHarness::StartCluster(int workers, absl::Duration timeout) {
  return StartCluster(workers, "", timeout);
}

absl::Status ClusterHarness::StartCluster(int workers, const std::string& last_worker_args, absl::Duration timeout) {
  if (absl::Status s = StartShepherd(); !s.ok()) return s;
  const int plain = last_worker_args.empty() ? workers : workers - 1;
  if (absl::Status s = StartSupervisors(plain); !s.ok()) return s;
  if (plain < workers) {
    if (absl::Status s = StartSupervisors(1, "cpu", last_worker_args); !s.ok()) return s;
  }
  return WaitForWorkers(workers, timeout);
}

pid_t ClusterHarness::WorkerPid(int i) {
  std::vector<pid_t> children = ChildrenOf(supervisors_[i]->pid());
  for (pid_t child : children) pids_seen_.insert(child);
  return children.size() == 1 ? children[0] : 0;
}

void ClusterHarness::RecordWorkerPids() {
  for (auto& supervisor : supervisors_) {
    for (pid_t child : ChildrenOf(supervisor->pid())) pids_seen_.insert(child);
  }
}

absl::Status ClusterHarness::WaitForWorkers(int n, absl::Duration timeout) {
  absl::Time deadline = absl::Now() + timeout;
  std::string last;
  while (true) {
    RecordWorkerPids();
    grpc::ClientContext context;
    SetDeadline(&context, absl::Seconds(5));
    v1::ListWorkersResponse response;
    grpc::Status status = admin().ListWorkers(&context, v1::ListWorkersRequest(), &response);
    if (status.ok()) {
      int connected = 0;
      for (const v1::WorkerInfo& w : response.workers()) {
        connected += w.worker_connected() ? 1 : 0;
        if (w.process().pid() > 0) pids_seen_.insert(w.process().pid());
      }
      if (connected >= n) return absl::OkStatus();
      last = absl::StrCat(connected, " of ", n, " workers connected");
    } else {
      last = status.error_message();
    }
    if (absl::Now() > deadline) {
      return absl::DeadlineExceededError(absl::StrCat("waiting for ", n, " workers: ", last, "\n", Logs()));
    }
    absl::SleepFor(absl::Milliseconds(100));
  }
}

std::vector<MetricsEndpoint> ClusterHarness::MetricsEndpoints() const {
  auto endpoint = [](std::string job, std::string instance, int port) {
    return MetricsEndpoint{std::move(job), std::move(instance), absl::StrCat("127.0.0.1:", port), port};
  };
  std::vector<MetricsEndpoint> out = {endpoint("pcp-shepherd", "shepherd", metrics_port_)};
  for (size_t i = 0; i < supervisor_metrics_ports_.size(); ++i) {
    const std::string id = supervisor_id(static_cast<int>(i));
    out.push_back(endpoint("pcp-supervisor", id, supervisor_metrics_ports_[i]));
    out.push_back(endpoint("pcp-worker", absl::StrCat(id, "-worker"), worker_metrics_ports_[i]));
  }
  return out;
}

absl::StatusOr<std::string> ClusterHarness::ScrapeMetrics(int port) const {
  return HttpGet("127.0.0.1", port, "/metrics");
}

std::string ClusterHarness::WriteJob(const E2eJob& job) {
  std::string yaml = absl::StrCat(
      "# Written by the e2e tests (cluster_harness.cc).\n"
      "name: ",
      job.name, "\n",
      job.model_yaml.empty() ? absl::StrCat("model:\n  block_size: ", job.block_size, "\n  n_layer: ", job.n_layer,
                                            "\n  n_head: 2\n  n_embd: ", job.n_embd, "\n")
                             : job.model_yaml,
      "data:\n  path: ", PCP_DATA_DIR, "/tiny_shakespeare.txt\n",
      "optimizer:\n  lr: 3.0e-3\n  min_lr: 3.0e-4\n  warmup_iters: 5\n", "training:\n  batch_size: ", job.batch_size,
      "\n  eval_iters: ", job.eval_iters, "\n  seed: 1337\n  threads: 1\n  backend: cpu\n",
      "diloco:\n  workers: ", job.workers, "\n  inner_steps: ", job.inner_steps, "\n  rounds: ", job.rounds,
      "\n  min_workers: ", job.min_workers, "\n  round_deadline_s: ", job.round_deadline_s,
      "\n  checkpoint_every: ", job.checkpoint_every, "\n  eval_every: 1\n", job.diloco_yaml,
      "sample:\n  max_new_tokens: 40\n", job.extra_yaml);
  std::string path = absl::StrCat(job_dir(), "/", job.name, ".yaml");
  absl::Status written = WriteFileAtomic(path, yaml);
  if (!written.ok()) return "";
  return path;
}

absl::StatusOr<CommandResult> ClusterHarness::Pcpctl(const std::vector<std::string>& args, absl::Duration timeout) {
  static int count = 0;
  std::vector<std::string> full = {absl::StrCat("--shepherd=", target_)};
  full.insert(full.end(), security_.pcpctl_args.begin(), security_.pcpctl_args.end());
  full.insert(full.end(), args.begin(), args.end());
  absl::StatusOr<std::unique_ptr<Process>> p = Process::Start(
      {.binary = PCPCTL_BINARY,
       .args = full,
       .log_path = absl::StrCat(log_dir(), "/pcpctl-", ++count, "-", args.empty() ? "" : args[0], ".log")});
  if (!p.ok()) return p.status();
  absl::StatusOr<int> status = (*p)->Wait(timeout);
  if (!status.ok()) {
    (void)(*p)->Stop(absl::Seconds(1));
    return absl::DeadlineExceededError(
        absl::StrCat("pcpctl ", absl::StrJoin(args, " "), ": ", status.status().message(), "; output:\n", (*p)->Log()));
  }
  return CommandResult{WIFEXITED(*status) ? WEXITSTATUS(*status) : -1, (*p)->Log()};
}

v1::Admin::Stub& ClusterHarness::admin() {
  if (admin_ == nullptr) {
    channel_ = *auth::MakeChannel(target_, security_.admin, grpc::ChannelArguments());
    admin_ = v1::Admin::NewStub(channel_);
  }
  return *admin_;
}

absl::StatusOr<ClusterHarness::FinishedJob> ClusterHarness::RunJob(const E2eJob& job, absl::Duration timeout) {
  PCP_ASSIGN_OR_RETURN(std::string id, SubmitJob(job));
  FinishedJob done;
  PCP_ASSIGN_OR_RETURN(done.job, WaitForJobEnd(id, timeout));
  PCP_ASSIGN_OR_RETURN(done.history, JobHistory(id));
  return done;
}

absl::StatusOr<std::vector<v1::RoundRecord>> ClusterHarness::JobHistory(const std::string& job_id, uint32_t page_size) {
  std::vector<v1::RoundRecord> records;
  v1::GetJobHistoryRequest request;
  request.set_job_id(job_id);
  request.set_limit(page_size);
  while (true) {
    grpc::ClientContext context;
    SetDeadline(&context);
    v1::GetJobHistoryResponse page;
    grpc::Status status = admin().GetJobHistory(&context, request, &page);
    if (!status.ok()) return absl::Status(static_cast<absl::StatusCode>(status.error_code()), status.error_message());
    records.insert(records.end(), page.records().begin(), page.records().end());
    if (page.next_after_round() == 0) return records;
    request.set_after_round(page.next_after_round());
  }
}

absl::StatusOr<std::string> ClusterHarness::SubmitJob(const E2eJob& job) {
  absl::StatusOr<CommandResult> submit = Pcpctl({"submit", "--quiet", WriteJob(job)});
  if (!submit.ok()) return submit.status();
  if (submit->exit_code != 0) {
    return absl::InternalError(absl::StrCat("pcpctl submit exited ", submit->exit_code, ": ", submit->output));
  }
  return std::string(absl::StripAsciiWhitespace(submit->output));
}

absl::StatusOr<v1::Job> ClusterHarness::WaitForJobEnd(const std::string& job_id, absl::Duration timeout) {
  absl::Time deadline = absl::Now() + timeout;
  std::string last;
  while (true) {
    RecordWorkerPids();
    grpc::ClientContext context;
    SetDeadline(&context, absl::Seconds(5));
    v1::GetJobRequest request;
    request.set_job_id(job_id);
    v1::Job job;
    grpc::Status status = admin().GetJob(&context, request, &job);
    if (status.ok() && Finished(job.state())) return job;
    last = status.ok() ? absl::StrCat("state ", v1::JobState_Name(job.state()), ", round ", job.progress().round(), "/",
                                      job.progress().total_rounds())
                       : status.error_message();
    if (absl::Now() > deadline) {
      return absl::DeadlineExceededError(
          absl::StrCat(job_id, " did not finish in ", absl::FormatDuration(timeout), " (", last, ")\n", Logs()));
    }
    absl::SleepFor(absl::Milliseconds(200));
  }
}

absl::Status ClusterHarness::StopAll() {
  RecordWorkerPids();
  std::vector<std::string> problems;
  for (auto& supervisor : supervisors_) {
    absl::StatusOr<int> status = supervisor->Stop(absl::Seconds(20));
    if (!status.ok()) {
      problems.push_back(std::string(status.status().message()));
    } else if (!WIFEXITED(*status) || WEXITSTATUS(*status) != 0) {
      // A supervisor that had to be SIGKILLed (or failed) did not stop cleanly.
      problems.push_back(absl::StrCat(supervisor->name(), " ", DescribeWaitStatus(*status)));
    }
  }
  if (shepherd_ != nullptr) {
    absl::StatusOr<int> status = shepherd_->Stop(absl::Seconds(20));
    if (!status.ok()) {
      problems.push_back(std::string(status.status().message()));
    } else if (!WIFEXITED(*status) || WEXITSTATUS(*status) != 0) {
      problems.push_back(absl::StrCat(shepherd_->name(), " ", DescribeWaitStatus(*status)));
    }
  }
  for (auto& p : dead_) (void)p->Stop(absl::Seconds(5));
  for (pid_t pid : pids_seen_) {
    if (!WaitForPidGone(pid, absl::Seconds(10)).ok()) {
      problems.push_back(absl::StrCat("process ", pid, " is still alive (an orphan)"));
    }
  }
  supervisors_.clear();  // already stopped; keeps a second StopAll from repeating the checks
  shepherd_.reset();
  dead_.clear();
  if (problems.empty()) return absl::OkStatus();
  return absl::InternalError(absl::StrCat("stopping the cluster: ", absl::StrJoin(problems, "; ")));
}

std::string ClusterHarness::Logs(int lines) const {
  std::string out;
  auto add = [&](const Process* p) {
    if (p != nullptr) absl::StrAppend(&out, "---- ", p->log_path(), "\n", p->LogTail(lines));
  };
  for (const auto& p : dead_) add(p.get());
  add(shepherd_.get());
  for (const auto& p : supervisors_) add(p.get());
  return out;
}

int64_t RssKiB(pid_t pid) {
  absl::StatusOr<loadgen::ProcMemory> memory = loadgen::ReadProcMemory(pid);
  return memory.ok() ? memory->rss_bytes / 1024 : 0;
}

}  // namespace pcp::testing

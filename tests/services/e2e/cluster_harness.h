// Test-only: a real PCP cluster on loopback, made of processes (pcp-shepherd, N
// pcp-supervisor each spawning its pcp-worker), for end-to-end and fault tests.
//
//   absl::StatusOr<TempDir> dir = TempDir::Create();
//   ClusterHarness cluster(dir->path());
//   ASSERT_TRUE(cluster.StartCluster(2).ok()) << cluster.Logs();  // shepherd + 2 supervisors/workers
//   std::string job = cluster.WriteJob({.name = "tiny_e2e", .rounds = 6});
//   absl::StatusOr<CommandResult> submit = cluster.Pcpctl({"submit", "--quiet", job});
//   ...
//   ASSERT_TRUE(cluster.StopAll().ok());   // every PID it started (workers included) is gone
//
// Layout under `dir`: shepherd-state/ (the shepherd's state dir), supervisor-N/ (each
// supervisor's state dir), jobs/ (job files), logs/*.log (one per process, kept for
// failure messages; PCP_KEEP_TEST_DIRS=1 keeps the whole folder).
//
// The shepherd listens on one port picked at construction, so a restarted shepherd comes
// back where its supervisors and workers look for it. Timings are short for tests:
// heartbeats every 250 ms, a peer is dead after 1.5 s of silence, worker restarts after
// 200 ms (doubling, at most 2 s).
//
// Metrics: every process serves Prometheus /metrics on its own loopback port, picked once
// (a restarted shepherd or worker comes back on the same port): the shepherd's at
// construction, supervisor i's and its worker's when StartSupervisors starts it.
//   for (const MetricsEndpoint& e : cluster.MetricsEndpoints()) ...   // job, instance, port
//   absl::StatusOr<std::string> text = cluster.ScrapeMetrics(cluster.shepherd_metrics_port());
#ifndef PCP_TESTS_SERVICES_E2E_CLUSTER_HARNESS_H_
#define PCP_TESTS_SERVICES_E2E_CLUSTER_HARNESS_H_

#include <sys/types.h>

#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "pcp/auth/tls_credentials.h"
#include "pcp/v1/admin.grpc.pb.h"
#include "process_harness.h"

namespace pcp::testing {

// The job file the tests submit: a tiny character-level GPT on tiny Shakespeare.
struct E2eJob {
  std::string name = "tiny_e2e";
  int rounds = 6;
  int inner_steps = 10;  // τ
  int workers = 2;
  int min_workers = 1;
  int checkpoint_every = 2;
  double round_deadline_s = 60;
  int batch_size = 8;
  int n_layer = 2;
  int n_embd = 32;
  int block_size = 32;
  int eval_iters = 4;
  // Extra keys of the diloco section, each line indented by two spaces (e.g.
  // "  screening: {action: clip}\n").
  std::string diloco_yaml;
  // Extra YAML appended verbatim (e.g. a deliberate mistake).
  std::string extra_yaml;
  // When set, the whole model section instead of the GPT's ("model:\n  stablehlo: ...\n").
  std::string model_yaml;
};

// One /metrics endpoint of the cluster. `job` is the Prometheus job name the deploy files use
// (pcp-shepherd, pcp-supervisor, pcp-worker); `instance` names the process ("shepherd",
// "node-1", "node-1-worker").
struct MetricsEndpoint {
  std::string job;
  std::string instance;
  std::string address;  // 127.0.0.1:PORT
  int port = 0;
};

// A cluster under TLS / mTLS with roles (SetSecurity before starting anything).
struct ClusterSecurity {
  // Extra shepherd.yaml text (tls:, auth:), written to a config file the shepherd reads.
  std::string shepherd_yaml;
  // Extra supervisor flags for supervisor i (0-based), e.g. its --tls_cert / --tls_key.
  std::function<std::vector<std::string>(int i)> supervisor_args;
  // Extra pcpctl flags (--ca, --cert, --key, --token_file).
  std::vector<std::string> pcpctl_args;
  // The harness's own Admin client (GetCluster, ListWorkers, GetJob polling).
  auth::ClientCredentials admin;
};

struct CommandResult {
  int exit_code = -1;  // -1: killed by a signal
  std::string output;  // stdout and stderr, interleaved
};

class ClusterHarness {
 public:
  explicit ClusterHarness(std::string dir);
  // TLS files, roles and credentials for every process started from now on.
  void SetSecurity(ClusterSecurity security);
  ~ClusterHarness();  // StopAll()
  ClusterHarness(const ClusterHarness&) = delete;
  ClusterHarness& operator=(const ClusterHarness&) = delete;

  // Starts pcp-shepherd on the cluster's port and state dir; waits until it serves
  // (its "listening on" line and a GetCluster answer). A second call after the first
  // shepherd was killed or stopped starts a fresh process on the same port and state.
  absl::Status StartShepherd();
  // Starts supervisors "node-1".."node-N" (continuing the numbering on later calls), each
  // running pcp-worker with --backend=<backend> --threads=1, and `worker_args` (more worker
  // flags, comma-separated, e.g. "--fault_delta=scale:1000") when given.
  absl::Status StartSupervisors(int n, const std::string& backend = "cpu", const std::string& worker_args = "");
  // Waits until ListWorkers shows `n` workers with live Training streams.
  absl::Status WaitForWorkers(int n, absl::Duration timeout);
  // The usual start: StartShepherd, StartSupervisors(workers) on the CPU backend, then
  // WaitForWorkers(workers, timeout).
  absl::Status StartCluster(int workers, absl::Duration timeout = absl::Seconds(120));
  // The same with the last worker (node-`workers`) run with `last_worker_args` (worker flags,
  // e.g. "--fault_slow_factor=4"): one odd worker among plain ones.
  absl::Status StartCluster(int workers, const std::string& last_worker_args,
                            absl::Duration timeout = absl::Seconds(120));

  // Flags added to the shepherd's command line from its next start on (e.g. limits).
  void SetShepherdFlags(std::vector<std::string> flags) { shepherd_flags_ = std::move(flags); }

  Process* shepherd() { return shepherd_.get(); }
  Process* supervisor(int i) { return supervisors_[i].get(); }
  int supervisor_count() const { return static_cast<int>(supervisors_.size()); }
  std::string supervisor_id(int i) const;
  // The live worker process of supervisor `i` (its only child), or 0.
  pid_t WorkerPid(int i);

  // Every metrics endpoint: the shepherd, then per supervisor its own and its worker's.
  std::vector<MetricsEndpoint> MetricsEndpoints() const;
  int shepherd_metrics_port() const { return metrics_port_; }
  int supervisor_metrics_port(int i) const { return supervisor_metrics_ports_[i]; }
  int worker_metrics_port(int i) const { return worker_metrics_ports_[i]; }
  // The text of http://127.0.0.1:PORT/metrics (UNAVAILABLE while nothing serves it).
  absl::StatusOr<std::string> ScrapeMetrics(int port) const;

  const std::string& admin_target() const { return target_; }
  const std::string& dir() const { return dir_; }
  std::string state_dir() const { return dir_ + "/shepherd-state"; }
  std::string job_dir() const { return dir_ + "/jobs"; }
  std::string log_dir() const { return dir_ + "/logs"; }

  // Writes jobs/<name>.yaml (absolute data path) and returns its path.
  std::string WriteJob(const E2eJob& job);
  // WriteJob with the defaults.
  std::string TinyJobPath() { return WriteJob(E2eJob()); }

  // Runs the real pcpctl binary against this cluster; waits up to `timeout`.
  absl::StatusOr<CommandResult> Pcpctl(const std::vector<std::string>& args,
                                       absl::Duration timeout = absl::Seconds(60));

  // A stub for the Admin service and a deadline helper for direct calls.
  v1::Admin::Stub& admin();
  // Polls GetJob until the job has finished (completed, failed or cancelled).
  absl::StatusOr<v1::Job> WaitForJobEnd(const std::string& job_id, absl::Duration timeout);
  // Writes `job` (WriteJob) and submits it with `pcpctl submit --quiet`; the job id, or an
  // error with pcpctl's output when it did not exit 0.
  absl::StatusOr<std::string> SubmitJob(const E2eJob& job);
  // Every record of the job's history (GetJobHistory, read in pages of `page_size`).
  absl::StatusOr<std::vector<v1::RoundRecord>> JobHistory(const std::string& job_id, uint32_t page_size = 100);
  // SubmitJob, WaitForJobEnd (up to `timeout`), then JobHistory.
  struct FinishedJob {
    v1::Job job;
    std::vector<v1::RoundRecord> history;
  };
  absl::StatusOr<FinishedJob> RunJob(const E2eJob& job, absl::Duration timeout);

  // Stops every supervisor (SIGTERM; each stops its worker), then the shepherd, and checks
  // that every process this cluster started or saw (workers included) is gone.
  absl::Status StopAll();
  // PIDs of every process seen so far (shepherds, supervisors, workers).
  std::vector<pid_t> PidsSeen() const { return {pids_seen_.begin(), pids_seen_.end()}; }
  // Notes the supervisors' current children (workers) as seen.
  void RecordWorkerPids();

  // The tail of every process log, for failure messages.
  std::string Logs(int lines = 25) const;

 private:
  std::string dir_;
  int port_;
  std::string target_;
  int metrics_port_;
  std::vector<int> supervisor_metrics_ports_;
  std::vector<int> worker_metrics_ports_;
  int shepherd_starts_ = 0;
  std::vector<std::string> shepherd_flags_;
  std::unique_ptr<Process> shepherd_;
  std::vector<std::unique_ptr<Process>> supervisors_;
  std::vector<std::unique_ptr<Process>> dead_;  // killed processes, kept for their logs
  std::set<pid_t> pids_seen_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::Admin::Stub> admin_;
  ClusterSecurity security_;
};

// When a service logged `line` ("2026-01-02 03:04:05.678 I shepherd] ...", spdlog's local
// time with milliseconds); `fallback` when the line carries no such time.
absl::Time LogLineTime(const std::string& line, absl::Time fallback);

// One completed round of a job, as the shepherd logs it:
// "job J: round 3/6 complete: 2 workers (node-1, node-2), train loss 3.2109, ...".
struct RoundLine {
  int round = 0;
  int workers = 0;
  double train_loss = 0;
};
// Every completed round of `job_id` in a shepherd log, in order.
std::vector<RoundLine> RoundsFromLog(const std::string& log, const std::string& job_id);

// A ClientContext deadline `timeout` from now.
void SetDeadline(grpc::ClientContext* context, absl::Duration timeout = absl::Seconds(20));

// VmRSS of a process in KiB (pcp/loadgen/proc_stats.h), 0 if unreadable.
int64_t RssKiB(pid_t pid);

}  // namespace pcp::testing

#endif  // PCP_TESTS_SERVICES_E2E_CLUSTER_HARNESS_H_

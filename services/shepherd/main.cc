// pcp-shepherd: the coordinator of a PCP cluster (job queue, DiLoCo rounds, checkpoints,
// Admin API). Logs to stderr; prints "pcp-shepherd listening on HOST:PORT" on stdout once
// it serves. SIGTERM / SIGINT: checkpoint a running job and exit 0.
//
//   pcp-shepherd --config config/shepherd.yaml [--listen=127.0.0.1:0] [--state_dir=DIR]
//                [--metrics_listen=127.0.0.1:9470]   (Prometheus /metrics; --metrics_listen= = off)
//                [--address_file=F] [--metrics_address_file=F]   (bound HOST:PORT, for port 0)
//                [--data_roots=DIR,DIR] [--max_queued_jobs=N] ...   (admission; see --help)

#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "pcp/base/absl_fmt.h"
#include "pcp/base/file.h"
#include "pcp/base/termination_signal.h"
#include "pcp/metrics/metrics_server.h"
#include "pcp/rpc/stream_memory.h"
#include "pcp/shepherd/shepherd.h"
#include "spdlog/sinks/stdout_color_sinks.h"
#include "spdlog/spdlog.h"

ABSL_FLAG(std::string, config, "", "shepherd YAML config (see config/shepherd.yaml); flags override it");
ABSL_FLAG(std::string, listen, "", "override 'listen': HOST:PORT (port 0 = any free port)");
ABSL_FLAG(std::string, state_dir, "", "override 'state_dir'");
ABSL_FLAG(int64_t, heartbeat_interval_ms, -1, "override 'heartbeat_interval_ms'");
ABSL_FLAG(int64_t, heartbeat_timeout_ms, -1, "override 'heartbeat_timeout_ms'");
ABSL_FLAG(int64_t, round_start_grace_ms, -1, "override 'round_start_grace_ms'");
ABSL_FLAG(int64_t, eval_threads, -1, "override 'eval_threads'");
ABSL_FLAG(std::string, log_level, "", "override 'log_level'");
// "from-config" (not a valid address) marks the flag as not given, so that an empty value can
// mean "metrics off".
ABSL_FLAG(std::string, metrics_listen, "from-config",
          "override 'metrics_listen': HOST:PORT of /metrics (port 0 = any free port; --metrics_listen= turns it off)");
ABSL_FLAG(std::string, address_file, "", "write the bound HOST:PORT to this file once serving");
ABSL_FLAG(std::string, metrics_address_file, "",
          "write the bound HOST:PORT of /metrics to this file once serving (with metrics port 0, a "
          "restart reuses the port in it when free)");
// Admission (README "Admission and limits"). "from-config" marks --data_roots as not given,
// so that an empty value can mean "no data may be submitted".
ABSL_FLAG(std::vector<std::string>, data_roots, {"from-config"},
          "override 'data_roots': comma-separated folders job data must resolve inside (empty = none)");
ABSL_FLAG(int64_t, max_data_file_bytes, -1, "override 'max_data_file_bytes'");
ABSL_FLAG(int64_t, worker_memory_bytes, -1, "override 'worker_memory_bytes' (0 = half of this machine's memory)");
ABSL_FLAG(int64_t, shepherd_memory_bytes, -1, "override 'shepherd_memory_bytes' (0 = half of this machine's memory)");
ABSL_FLAG(int64_t, max_jobs, -1, "override 'max_jobs'");
ABSL_FLAG(int64_t, max_queued_jobs, -1, "override 'max_queued_jobs'");
ABSL_FLAG(int64_t, max_job_start_attempts, -1, "override 'max_job_start_attempts'");
ABSL_FLAG(int64_t, max_admin_calls, -1, "override 'max_admin_calls'");
ABSL_FLAG(int64_t, max_watch_streams, -1, "override 'max_watch_streams'");
ABSL_FLAG(int64_t, max_watch_queue, -1, "override 'max_watch_queue'");
ABSL_FLAG(int64_t, transport_receive_bytes, -1,
          "override 'transport_receive_bytes' (bytes gRPC may hold received but unread, shared by transport_workers)");
ABSL_FLAG(int64_t, transport_workers, -1, "override 'transport_workers' (streams the receive budget is divided among)");

namespace {

absl::StatusOr<pcp::shepherd::ShepherdConfig> LoadConfig() {
  pcp::shepherd::ShepherdConfig config;
  if (const std::string path = absl::GetFlag(FLAGS_config); !path.empty()) {
    absl::StatusOr<pcp::shepherd::ShepherdConfig> loaded = pcp::shepherd::LoadShepherdConfig(path);
    if (!loaded.ok()) return loaded.status();
    config = *std::move(loaded);
  }
  auto str = [](const absl::Flag<std::string>& flag, std::string* out) {
    if (std::string v = absl::GetFlag(flag); !v.empty()) *out = v;
  };
  str(FLAGS_listen, &config.listen);
  str(FLAGS_state_dir, &config.state_dir);
  str(FLAGS_log_level, &config.log_level);
  // Integer flags: -1 (the default) = not given.
  using Config = pcp::shepherd::ShepherdConfig;
  const std::pair<const absl::Flag<int64_t>*, int64_t Config::*> numbers[] = {
      {&FLAGS_heartbeat_interval_ms, &Config::heartbeat_interval_ms},
      {&FLAGS_heartbeat_timeout_ms, &Config::heartbeat_timeout_ms},
      {&FLAGS_round_start_grace_ms, &Config::round_start_grace_ms},
      {&FLAGS_eval_threads, &Config::eval_threads},
      {&FLAGS_max_data_file_bytes, &Config::max_data_file_bytes},
      {&FLAGS_worker_memory_bytes, &Config::worker_memory_bytes},
      {&FLAGS_shepherd_memory_bytes, &Config::shepherd_memory_bytes},
      {&FLAGS_max_jobs, &Config::max_jobs},
      {&FLAGS_max_queued_jobs, &Config::max_queued_jobs},
      {&FLAGS_max_job_start_attempts, &Config::max_job_start_attempts},
      {&FLAGS_max_admin_calls, &Config::max_admin_calls},
      {&FLAGS_max_watch_streams, &Config::max_watch_streams},
      {&FLAGS_max_watch_queue, &Config::max_watch_queue},
      {&FLAGS_transport_receive_bytes, &Config::transport_receive_bytes},
      {&FLAGS_transport_workers, &Config::transport_workers},
  };
  for (const auto& [flag, member] : numbers) {
    if (int64_t v = absl::GetFlag(*flag); v >= 0) config.*member = v;
  }
  if (std::vector<std::string> v = absl::GetFlag(FLAGS_data_roots); v != std::vector<std::string>{"from-config"}) {
    config.data_roots = v;
  }
  // Given on the command line, even empty (= metrics off), the flag wins.
  if (std::string v = absl::GetFlag(FLAGS_metrics_listen); v != "from-config") config.metrics_listen = v;
  if (absl::Status s = config.Validate(); !s.ok()) return s;
  return config;
}

}  // namespace

int main(int argc, char** argv) {
  pcp::KeepStreamBuffersInHeap();  // before gRPC allocates anything (pcp/rpc/stream_memory.h)
  absl::SetProgramUsageMessage("the PCP shepherd: pcp-shepherd --config shepherd.yaml [--listen=HOST:PORT] ...");
  absl::ParseCommandLine(argc, argv);
  spdlog::set_default_logger(spdlog::stderr_color_mt("shepherd"));
  spdlog::set_pattern("%Y-%m-%d %H:%M:%S.%e %^%L%$ shepherd] %v");
  absl::StatusOr<pcp::shepherd::ShepherdConfig> config = LoadConfig();
  if (!config.ok()) {
    std::fprintf(stderr, "pcp-shepherd: %s\n", std::string(config.status().message()).c_str());
    return 2;
  }
  spdlog::set_level(spdlog::level::from_str(config->log_level));

  if (absl::Status s = pcp::InstallTerminationHandler(); !s.ok()) {
    spdlog::error("{}", s.message());
    return 1;
  }

  // Metrics are a side channel: a port that cannot be bound is logged, and training goes on.
  absl::StatusOr<std::unique_ptr<pcp::metrics::MetricsServer>> metrics =
      pcp::metrics::ServeServiceMetrics(pcp::metrics::Service::kShepherd, config->metrics_listen,
                                        absl::GetFlag(FLAGS_metrics_address_file));
  if (!metrics.ok()) {
    spdlog::error("no metrics: {}", metrics.status().message());
  } else if (*metrics != nullptr) {
    spdlog::info("metrics on {}", (*metrics)->url());
  }

  absl::StatusOr<std::unique_ptr<pcp::shepherd::Shepherd>> shepherd = pcp::shepherd::Shepherd::Start(*config);
  if (!shepherd.ok()) {
    spdlog::error("cannot start: {}", shepherd.status().message());
    return 1;
  }
  std::printf("pcp-shepherd listening on %s\n", (*shepherd)->address().c_str());
  std::fflush(stdout);
  if (const std::string path = absl::GetFlag(FLAGS_address_file); !path.empty()) {
    if (absl::Status s = pcp::WriteFileAtomic(path, (*shepherd)->address() + "\n"); !s.ok()) {
      spdlog::error("--address_file: {}", s.message());
    }
  }
  spdlog::info("stopping ({})", pcp::WaitForTermination());
  (*shepherd)->Shutdown();
  return 0;
}

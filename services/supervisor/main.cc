// pcp-supervisor: keeps one worker process alive on this node and connects it to the
// shepherd's control plane.
//
//   pcp-supervisor --config=config/supervisor.yaml [--shepherd=HOST:PORT]
//                  [--supervisor_id=ID] [--worker_binary=PATH] [--worker_args=A,B] ...
//                  [--set KEY=VALUE] ...   (every key of supervisor.yaml; --help lists them)
//                  [--metrics_listen=127.0.0.1:9471]   (Prometheus /metrics; --metrics_listen= = off)
//                  [--metrics_address_file=F]          (bound HOST:PORT of /metrics, for port 0)
//
// Exits 0 after SIGTERM/SIGINT or the shepherd's Shutdown command, once the worker is gone;
// 2 for a bad command line or configuration; 1 for other errors.
#include <cstdio>
#include <string>
#include <vector>

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "absl/flags/flag.h"
#include "pcp/auth/tls_failures.h"
#include "pcp/base/absl_fmt.h"
#include "pcp/base/termination_signal.h"
#include "pcp/metrics/metrics_server.h"
#include "pcp/supervisor/supervisor.h"
#include "supervisor_flags.h"

ABSL_FLAG(std::string, metrics_address_file, "",
          "write the bound HOST:PORT of /metrics to this file once serving (with metrics port 0, a "
          "restart reuses the port in it when free)");

int main(int argc, char** argv) {
  if (absl::Status s = pcp::InstallTerminationHandler(); !s.ok()) {
    std::fprintf(stderr, "pcp-supervisor: %s\n", std::string(s.message()).c_str());
    return 1;
  }
  spdlog::set_default_logger(spdlog::stderr_color_mt("supervisor"));
  absl::StatusOr<pcp::supervisor::SupervisorConfig> config = pcp::supervisor::ConfigFromCommandLine(
      argc, argv,
      "keeps a worker process alive and connected to the shepherd\n"
      "  pcp-supervisor --config=supervisor.yaml [--shepherd=HOST:PORT] [--supervisor_id=ID] "
      "[--state_dir=DIR] [--worker_binary=PATH] [--worker_args=A,B,...] [--set KEY=VALUE] ...");
  if (!config.ok()) {
    std::fprintf(stderr, "pcp-supervisor: %s\n", std::string(config.status().message()).c_str());
    return 2;
  }
  // Metrics are a side channel: a port that cannot be bound is logged, and the worker is kept.
  absl::StatusOr<std::unique_ptr<pcp::metrics::MetricsServer>> metrics =
      pcp::metrics::ServeServiceMetrics(pcp::metrics::Service::kSupervisor, config->metrics_listen,
                                        absl::GetFlag(FLAGS_metrics_address_file));
  if (!metrics.ok()) {
    spdlog::error("no metrics: {}", metrics.status().message());
  } else if (*metrics != nullptr) {
    spdlog::info("metrics on {}", (*metrics)->url());
  }
  // A failed TLS handshake is in the control client's reconnect line, said precisely; gRPC's
  // own line for it (OpenSSL's words, at every retry) is left out.
  pcp::auth::InstallHandshakeFailureHook(nullptr, /*quiet_handshake_lines=*/true);
  if (absl::Status s = pcp::supervisor::RunSupervisor(*config); !s.ok()) {
    std::fprintf(stderr, "pcp-supervisor: %s\n", std::string(s.message()).c_str());
    return 1;
  }
  return 0;
}

// pcp-worker: runs DiLoCo rounds for a shepherd. Usually started by pcp-supervisor, which
// passes --shepherd and --supervisor_id and sets PCP_WORKER_INCARNATION.
//
//   pcp-worker --shepherd=127.0.0.1:7070 --supervisor_id=node-1 [--backend=cpu|vulkan|auto]
//              [--threads=N] [--cache_dir=DIR] [--metrics_listen=127.0.0.1:9472]
//              [--metrics_address_file=F]   (bound HOST:PORT of /metrics, for port 0)
//              [--data_roots=DIR,DIR] [--max_data_file_bytes=N]   (shared data files only)
//              [--tls_ca=ca.pem [--tls_cert=node.pem --tls_key=node.key]] [--token_source=env:PCP_TOKEN]
//              [--link_up_mbit=10 --link_down_mbit=10 --link_rtt_ms=50]   (emulated link, pcp/netem)
//              [--set KEY=VALUE] ...   (every flag is a key of one table, worker_flags.cc; --help)
// The token itself is never a flag: --token_source names where to read it.
// SIGTERM / SIGINT: abandon the running round, leave the stream cleanly, exit 0.

#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "pcp/auth/secret.h"
#include "pcp/auth/tls_credentials.h"
#include "pcp/base/absl_fmt.h"
#include "pcp/base/termination_signal.h"
#include "pcp/metrics/metrics_server.h"
#include "pcp/rpc/stream_memory.h"
#include "pcp/worker/worker.h"
#include "spdlog/sinks/stdout_color_sinks.h"
#include "spdlog/spdlog.h"
#include "worker_flags.h"

int main(int argc, char** argv) {
  pcp::KeepStreamBuffersInHeap();  // before gRPC allocates anything (pcp/rpc/stream_memory.h)
  absl::StatusOr<pcp::worker::WorkerSettings> settings = pcp::worker::WorkerSettingsFromCommandLine(
      argc, argv, "a PCP worker: pcp-worker --shepherd=HOST:PORT --supervisor_id=ID [--backend=cpu] [--set KEY=VALUE]");
  if (!settings.ok()) {
    std::fprintf(stderr, "pcp-worker: %s\n", std::string(settings.status().message()).c_str());
    return 2;
  }
  pcp::worker::WorkerOptions& options = settings->options;
  spdlog::set_default_logger(spdlog::stderr_color_mt("worker"));
  spdlog::set_pattern("%Y-%m-%d %H:%M:%S.%e %^%L%$ worker " + options.supervisor_id + "] %v");
  spdlog::set_level(spdlog::level::from_str(settings->log_level));

  if (absl::Status s = pcp::auth::ResolveTlsFiles("--tls", /*server=*/false, &options.credentials.tls); !s.ok()) {
    spdlog::error("{}", s.message());
    return 2;
  }
  if (!settings->token_source.empty()) {
    absl::StatusOr<std::string> token = pcp::auth::LoadSecret(settings->token_source);
    if (!token.ok()) {
      spdlog::error("--token_source: {}", token.status().message());
      return 2;
    }
    options.credentials.token = *std::move(token);
  }

  if (absl::Status s = pcp::InstallTerminationHandler(); !s.ok()) {
    spdlog::error("{}", s.message());
    return 2;
  }

  if (absl::Status s = pcp::metrics::ValidateMetricsListen(settings->metrics_listen); !s.ok()) {
    spdlog::error("--metrics_listen: {}", s.message());
    return 2;
  }
  // Metrics are a side channel: a port that cannot be bound is logged, and the worker goes on.
  absl::StatusOr<std::unique_ptr<pcp::metrics::MetricsServer>> metrics =
      pcp::metrics::ServeServiceMetrics(pcp::metrics::Service::kWorker, settings->metrics_listen,
                                        settings->metrics_address_file);
  if (!metrics.ok()) {
    spdlog::error("no metrics: {}", metrics.status().message());
  } else if (*metrics != nullptr) {
    spdlog::info("metrics on {}", (*metrics)->url());
  }

  absl::StatusOr<std::unique_ptr<pcp::worker::Worker>> worker = pcp::worker::Worker::Create(options);
  if (!worker.ok()) {
    spdlog::error("{}", worker.status().message());
    return 2;
  }
  constexpr absl::string_view kRunEnded = "the worker's run ended";
  std::thread signal_thread([&] {
    const std::string why = pcp::WaitForTermination();
    if (why == kRunEnded) return;
    spdlog::info("received {}: stopping", why);
    (*worker)->Stop();
  });
  absl::Status status = (*worker)->Run();
  pcp::RequestTermination(kRunEnded);
  signal_thread.join();
  if (!status.ok()) {
    spdlog::error("giving up: {}", status.ToString());
    return 1;
  }
  return 0;
}

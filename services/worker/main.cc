// pcp-worker: runs DiLoCo rounds for a shepherd. Usually started by pcp-supervisor, which
// passes --shepherd and --supervisor_id and sets PCP_WORKER_INCARNATION.
//
//   pcp-worker --shepherd=127.0.0.1:7070 --supervisor_id=node-1 [--backend=cpu|vulkan|auto]
//              [--threads=N] [--cache_dir=DIR] [--metrics_listen=127.0.0.1:9472]
//              [--metrics_address_file=F]   (bound HOST:PORT of /metrics, for port 0)
//              [--data_roots=DIR,DIR] [--max_data_file_bytes=N]   (shared data files only)
//              [--tls_ca=ca.pem [--tls_cert=node.pem --tls_key=node.key]] [--token_source=env:PCP_TOKEN]
//              [--link_up_mbit=10 --link_down_mbit=10 --link_rtt_ms=50]   (emulated link, pcp/netem)
// The token itself is never a flag: --token_source names where to read it.
// SIGTERM / SIGINT: abandon the running round, leave the stream cleanly, exit 0.

#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/numbers.h"
#include "pcp/auth/secret.h"
#include "pcp/auth/tls_credentials.h"
#include "pcp/base/absl_fmt.h"
#include "pcp/base/termination_signal.h"
#include "pcp/metrics/metrics_server.h"
#include "pcp/rpc/stream_memory.h"
#include "pcp/worker/worker.h"
#include "spdlog/sinks/stdout_color_sinks.h"
#include "spdlog/spdlog.h"

ABSL_FLAG(std::string, shepherd, "127.0.0.1:7070", "the shepherd's HOST:PORT");
ABSL_FLAG(std::string, supervisor_id, "", "stable identity of this worker slot (required)");
ABSL_FLAG(int64_t, incarnation, -1, "worker process count of the supervisor (default: $PCP_WORKER_INCARNATION, else 1)");
ABSL_FLAG(std::string, backend, "cpu", "compute backend: cpu, vulkan or auto");
ABSL_FLAG(int32_t, threads, 0, "CPU threads (0 = all cores)");
ABSL_FLAG(std::string, cache_dir, "", "keep received programs here (default: memory only)");
ABSL_FLAG(std::string, tls_ca, "", "CA certificate (PEM) that signed the shepherd's certificate; set = TLS");
ABSL_FLAG(std::string, tls_cert, "", "this node's certificate (PEM) for mTLS; may be credential:NAME");
ABSL_FLAG(std::string, tls_key, "", "this node's private key (PEM) for mTLS; may be credential:NAME");
ABSL_FLAG(int32_t, tls_refresh_s, pcp::auth::kDefaultCertRefreshSeconds, "re-read the TLS files this often");
ABSL_FLAG(std::string, token_source, "",
          "where this node's bearer token is (env:NAME, file:PATH or credential:NAME; never the token itself)");
ABSL_FLAG(int64_t, backoff_initial_ms, 500, "first reconnect delay");
ABSL_FLAG(int64_t, backoff_max_ms, 10000, "longest reconnect delay");
ABSL_FLAG(std::vector<std::string>, data_roots, {pcp::DefaultDataRoot()},
          "comma-separated folders a shared data file (data.shared: true) must resolve inside; "
          "empty = none (default: the example data folder of this build)");
ABSL_FLAG(int64_t, max_data_file_bytes, pcp::kDefaultMaxDataFileBytes, "largest shared data file read");
ABSL_FLAG(std::string, log_level, "info", "trace, debug, info, warn or error");
ABSL_FLAG(std::string, metrics_listen, "",
          "serve Prometheus /metrics on HOST:PORT (port 0 = any free port); empty = no metrics");
ABSL_FLAG(std::string, metrics_address_file, "",
          "write the bound HOST:PORT of /metrics to this file once serving (with metrics port 0, a "
          "restart reuses the port in it when free)");
ABSL_FLAG(double, link_up_mbit, 0,
          "emulate a slow link to the shepherd: cap worker -> shepherd at this many Mbit/s (0 = unlimited)");
ABSL_FLAG(double, link_down_mbit, 0, "emulated link: cap shepherd -> worker at this many Mbit/s (0 = unlimited)");
ABSL_FLAG(double, link_rtt_ms, 0, "emulated link: add this round-trip time in ms, half each way (0 = none)");

ABSL_FLAG(std::string, fault_delta, "",
          "TESTING ONLY: corrupt the Δs sent, one step per round in turn: none, scale:F, negate_scale:F, "
          "noise:F, lie:F or nan, separated by '/' (see pcp/worker/delta_fault.h)");

int main(int argc, char** argv) {
  pcp::KeepStreamBuffersInHeap();  // before gRPC allocates anything (pcp/rpc/stream_memory.h)
  absl::SetProgramUsageMessage("a PCP worker: pcp-worker --shepherd=HOST:PORT --supervisor_id=ID [--backend=cpu]");
  absl::ParseCommandLine(argc, argv);
  const std::string id = absl::GetFlag(FLAGS_supervisor_id);
  spdlog::set_default_logger(spdlog::stderr_color_mt("worker"));
  spdlog::set_pattern("%Y-%m-%d %H:%M:%S.%e %^%L%$ worker " + id + "] %v");
  spdlog::set_level(spdlog::level::from_str(absl::GetFlag(FLAGS_log_level)));

  pcp::worker::WorkerOptions options;
  options.shepherd = absl::GetFlag(FLAGS_shepherd);
  options.supervisor_id = id;
  options.incarnation = 1;
  if (const char* env = std::getenv("PCP_WORKER_INCARNATION"); env != nullptr) {
    uint64_t n = 0;
    if (absl::SimpleAtoi(env, &n) && n > 0) options.incarnation = n;
  }
  if (absl::GetFlag(FLAGS_incarnation) > 0) options.incarnation = static_cast<uint64_t>(absl::GetFlag(FLAGS_incarnation));
  options.backend = absl::GetFlag(FLAGS_backend);
  options.threads = absl::GetFlag(FLAGS_threads);
  options.cache_dir = absl::GetFlag(FLAGS_cache_dir);
  options.data_roots = absl::GetFlag(FLAGS_data_roots);
  options.max_data_file_bytes = absl::GetFlag(FLAGS_max_data_file_bytes);
  options.credentials.tls = {.ca = absl::GetFlag(FLAGS_tls_ca), .cert = absl::GetFlag(FLAGS_tls_cert),
                             .key = absl::GetFlag(FLAGS_tls_key), .refresh_interval_s = absl::GetFlag(FLAGS_tls_refresh_s)};
  if (absl::Status s = pcp::auth::ResolveTlsFiles("--tls", /*server=*/false, &options.credentials.tls); !s.ok()) {
    spdlog::error("{}", s.message());
    return 2;
  }
  if (const std::string source = absl::GetFlag(FLAGS_token_source); !source.empty()) {
    absl::StatusOr<std::string> token = pcp::auth::LoadSecret(source);
    if (!token.ok()) {
      spdlog::error("--token_source: {}", token.status().message());
      return 2;
    }
    options.credentials.token = *std::move(token);
  }
  options.link = {.up_mbit = absl::GetFlag(FLAGS_link_up_mbit), .down_mbit = absl::GetFlag(FLAGS_link_down_mbit),
                  .rtt_ms = absl::GetFlag(FLAGS_link_rtt_ms)};
  options.fault_delta = absl::GetFlag(FLAGS_fault_delta);
  options.backoff.initial = absl::Milliseconds(std::max<int64_t>(absl::GetFlag(FLAGS_backoff_initial_ms), 1));
  options.backoff.max = std::max(absl::Milliseconds(absl::GetFlag(FLAGS_backoff_max_ms)), options.backoff.initial);

  if (absl::Status s = pcp::InstallTerminationHandler(); !s.ok()) {
    spdlog::error("{}", s.message());
    return 2;
  }

  if (absl::Status s = pcp::metrics::ValidateMetricsListen(absl::GetFlag(FLAGS_metrics_listen)); !s.ok()) {
    spdlog::error("--metrics_listen: {}", s.message());
    return 2;
  }
  // Metrics are a side channel: a port that cannot be bound is logged, and the worker goes on.
  absl::StatusOr<std::unique_ptr<pcp::metrics::MetricsServer>> metrics =
      pcp::metrics::ServeServiceMetrics(pcp::metrics::Service::kWorker, absl::GetFlag(FLAGS_metrics_listen),
                                        absl::GetFlag(FLAGS_metrics_address_file));
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

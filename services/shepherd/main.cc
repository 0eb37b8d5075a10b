// pcp-shepherd: the coordinator of a PCP cluster (job queue, DiLoCo rounds, checkpoints,
// Admin API). Logs to stderr; prints "pcp-shepherd listening on HOST:PORT" on stdout once
// it serves. SIGTERM / SIGINT: checkpoint a running job and exit 0.
//
//   pcp-shepherd --config config/shepherd.yaml [--listen=127.0.0.1:0] [--state_dir=DIR]
//                [--metrics_listen=127.0.0.1:9470]   (Prometheus /metrics; --metrics_listen= = off)
//                [--address_file=F] [--metrics_address_file=F]   (bound HOST:PORT, for port 0)
//                [--data_roots=DIR,DIR] [--max_queued_jobs=N] ...   (admission: docs/operations.md#admission-and-limits)
//                [--set KEY=VALUE] ...   (every key of shepherd.yaml is a flag; --help lists them)

#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
#include "pcp/auth/tls_credentials.h"
#include "pcp/base/absl_fmt.h"
#include "pcp/base/file.h"
#include "pcp/base/sd_notify.h"
#include "pcp/base/termination_signal.h"
#include "pcp/metrics/metrics_server.h"
#include "pcp/rpc/stream_memory.h"
#include "pcp/shepherd/shepherd.h"
#include "spdlog/sinks/stdout_color_sinks.h"
#include "spdlog/spdlog.h"

// The flags that are not keys of shepherd.yaml; the keys' flags come from its table
// (ShepherdKeyFlags: --listen, --state_dir, --max_jobs, ..., --set KEY=VALUE).
ABSL_FLAG(std::string, config, "", "shepherd YAML config (see config/shepherd.yaml); the key flags override it");
ABSL_FLAG(std::string, address_file, "", "write the bound HOST:PORT to this file once serving");
ABSL_FLAG(std::string, metrics_address_file, "",
          "write the bound HOST:PORT of /metrics to this file once serving (with metrics port 0, a "
          "restart reuses the port in it when free)");

namespace {

// --config, then every key flag on top of it, in command-line order.
absl::StatusOr<pcp::shepherd::ShepherdConfig> LoadConfig(int argc, char** argv) {
  absl::SetProgramUsageMessage(absl::StrCat(
      "the PCP shepherd: pcp-shepherd --config shepherd.yaml [--listen=HOST:PORT] [--set KEY=VALUE] ...\n\n",
      pcp::shepherd::ShepherdFlagsHelp()));
  std::vector<char*> rest;
  std::vector<pcp::yaml_fields::Override> overrides;
  if (absl::Status s =
          pcp::shepherd::ShepherdKeyFlags().Extract(argc, argv, pcp::yaml_fields::IsAbslFlag, rest, overrides);
      !s.ok()) {
    return s;
  }
  std::vector<char*> positional = absl::ParseCommandLine(static_cast<int>(rest.size()), rest.data());
  if (positional.size() > 1) {
    return absl::InvalidArgumentError(absl::StrCat("unexpected argument '", positional[1], "'"));
  }
  return pcp::shepherd::ShepherdConfigFromCommandLine(absl::GetFlag(FLAGS_config), overrides);
}

}  // namespace

int main(int argc, char** argv) {
  pcp::KeepStreamBuffersInHeap();  // before gRPC allocates anything (pcp/rpc/stream_memory.h)
  absl::StatusOr<pcp::shepherd::ShepherdConfig> config = LoadConfig(argc, argv);
  spdlog::set_default_logger(spdlog::stderr_color_mt("shepherd"));
  spdlog::set_pattern("%Y-%m-%d %H:%M:%S.%e %^%L%$ shepherd] %v");
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
    // /metrics has neither TLS nor auth (Debian 12's CivetWeb crashes on its first HTTPS
    // connection): beyond loopback it belongs behind a TLS proxy (docs/operations.md#metrics).
    if (!pcp::auth::IsLoopbackAddress(config->metrics_listen)) {
      spdlog::warn(
          "metrics on {} are plaintext without auth: anyone who reaches the port reads them; serve them "
          "on loopback behind a TLS proxy (docs/operations.md#metrics)",
          (*metrics)->address());
    }
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
  // Under systemd (Type=notify): serving. WATCHDOG=1 follows from the listener watchdog.
  if (absl::Status s = pcp::SdNotify("READY=1"); !s.ok()) spdlog::warn("{}", s.message());
  spdlog::info("stopping ({})", pcp::WaitForTermination());
  (void)pcp::SdNotify("STOPPING=1");
  (*shepherd)->Shutdown();
  // A listener that stopped accepting: exit 1 so that Restart=on-failure restarts us.
  return (*shepherd)->listener_wedged() ? 1 : 0;
}

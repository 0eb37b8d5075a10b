#include "supervisor_flags.h"

#include <cstdint>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "pcp/base/status_macros.h"

ABSL_FLAG(std::string, config, "", "supervisor YAML file (see config/supervisor.yaml)");
ABSL_FLAG(std::string, shepherd, "", "shepherd address host:port (overrides 'shepherd')");
ABSL_FLAG(std::string, supervisor_id, "",
          "stable supervisor id (overrides 'supervisor_id'; default: generated into state_dir)");
ABSL_FLAG(std::string, state_dir, "", "directory for the generated id (overrides 'state_dir')");
ABSL_FLAG(std::string, tls_ca, "", "CA of the shepherd's certificate; set = TLS (overrides 'tls.ca')");
ABSL_FLAG(std::string, tls_cert, "", "this node's certificate for mTLS (overrides 'tls.cert')");
ABSL_FLAG(std::string, tls_key, "", "this node's private key for mTLS (overrides 'tls.key')");
ABSL_FLAG(std::string, token_source, "",
          "where this node's bearer token is: env:NAME, file:PATH or credential:NAME (overrides 'token')");
ABSL_FLAG(std::string, worker_binary, "", "worker executable (overrides 'worker.binary')");
ABSL_FLAG(std::vector<std::string>, worker_args, {},
          "extra worker arguments, comma-separated (replace 'worker.args')");
ABSL_FLAG(int64_t, grace_ms, -1, "SIGTERM->SIGKILL when the supervisor stops (ms)");
ABSL_FLAG(int64_t, worker_grace_ms, -1, "SIGTERM->SIGKILL for restart/drain commands (ms)");
ABSL_FLAG(int64_t, healthy_after_ms, -1, "worker uptime after which the backoff resets (ms)");
ABSL_FLAG(int64_t, backoff_initial_ms, -1, "first worker restart delay (ms)");
ABSL_FLAG(double, backoff_multiplier, -1, "worker restart delay growth per attempt");
ABSL_FLAG(int64_t, backoff_max_ms, -1, "longest worker restart delay (ms)");
ABSL_FLAG(double, backoff_jitter, -1, "relative jitter of the worker restart delay, [0, 1)");
ABSL_FLAG(int64_t, reconnect_initial_ms, -1, "first delay before reconnecting to the shepherd");
ABSL_FLAG(int64_t, reconnect_max_ms, -1, "longest delay before reconnecting to the shepherd");
// "from-config" (not a valid address) marks the flag as not given, so that an empty value can
// mean "metrics off".
ABSL_FLAG(std::string, metrics_listen, "from-config",
          "Prometheus /metrics HOST:PORT (overrides 'metrics_listen'; port 0 = any free port; "
          "--metrics_listen= turns it off)");

namespace pcp::supervisor {
namespace {

void Override(const absl::Flag<std::string>& flag, std::string* out) {
  if (std::string v = absl::GetFlag(flag); !v.empty()) *out = v;
}
void OverrideMs(const absl::Flag<int64_t>& flag, absl::Duration* out) {
  if (int64_t v = absl::GetFlag(flag); v >= 0) *out = absl::Milliseconds(v);
}
void Override(const absl::Flag<double>& flag, double* out) {
  if (double v = absl::GetFlag(flag); v >= 0) *out = v;
}

}  // namespace

absl::StatusOr<SupervisorConfig> ConfigFromFlags() {
  SupervisorConfig config;
  if (std::string path = absl::GetFlag(FLAGS_config); !path.empty()) {
    PCP_ASSIGN_OR_RETURN(config, LoadSupervisorConfig(path));
  }
  Override(FLAGS_shepherd, &config.shepherd);
  Override(FLAGS_supervisor_id, &config.supervisor_id);
  Override(FLAGS_state_dir, &config.state_dir);
  Override(FLAGS_tls_ca, &config.tls.ca);
  Override(FLAGS_tls_cert, &config.tls.cert);
  Override(FLAGS_tls_key, &config.tls.key);
  Override(FLAGS_token_source, &config.token_source);
  Override(FLAGS_worker_binary, &config.worker.binary);
  if (std::vector<std::string> args = absl::GetFlag(FLAGS_worker_args); !args.empty()) {
    config.worker.args = args;
  }
  OverrideMs(FLAGS_grace_ms, &config.grace);
  OverrideMs(FLAGS_worker_grace_ms, &config.worker.grace);
  OverrideMs(FLAGS_healthy_after_ms, &config.worker.healthy_after);
  OverrideMs(FLAGS_backoff_initial_ms, &config.worker.backoff.initial);
  Override(FLAGS_backoff_multiplier, &config.worker.backoff.multiplier);
  OverrideMs(FLAGS_backoff_max_ms, &config.worker.backoff.max);
  Override(FLAGS_backoff_jitter, &config.worker.backoff.jitter);
  OverrideMs(FLAGS_reconnect_initial_ms, &config.reconnect.backoff.initial);
  OverrideMs(FLAGS_reconnect_max_ms, &config.reconnect.backoff.max);
  // Given on the command line, even empty (= metrics off), the flag wins.
  if (std::string v = absl::GetFlag(FLAGS_metrics_listen); v != "from-config") config.metrics_listen = v;
  PCP_RETURN_IF_ERROR(ValidateSupervisorConfig(config));
  return config;
}

}  // namespace pcp::supervisor

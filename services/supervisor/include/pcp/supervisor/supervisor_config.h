// The supervisor's configuration: a YAML file (config/supervisor.yaml), then flags on top.
//
//   PCP_ASSIGN_OR_RETURN(SupervisorConfig config, LoadSupervisorConfig("supervisor.yaml"));
//   config.shepherd = "10.0.0.5:7070";                  // e.g. from a flag
//   PCP_RETURN_IF_ERROR(ValidateSupervisorConfig(config));
//
// The file (every key optional; unknown keys are errors; durations carry their unit):
//   shepherd: 127.0.0.1:7070        # the shepherd's gRPC address, host:port
//   supervisor_id: node-1           # stable id; if absent, generated once into state_dir
//   state_dir: /var/lib/pcp-supervisor
//   tls:                            # TLS to the shepherd (its worker gets the same files)
//     ca: /etc/pcp/ca.crt           # CA of the shepherd's certificate; set = TLS
//     cert: credential:node.crt     # this node's certificate for mTLS (identity = its id)
//     key: credential:node.key
//     refresh_interval_s: 10        # re-read the files this often (rotation without restart)
//   token: env:PCP_NODE_TOKEN       # where this node's bearer token is, if it uses one:
//                                   # env:NAME, file:PATH or credential:NAME; never the token
//   grace_ms: 10000                 # SIGTERM -> SIGKILL when the supervisor itself stops
//   metrics_listen: 127.0.0.1:9471  # Prometheus /metrics; port 0 = any free port; "" = off
//   worker:
//     binary: /usr/bin/pcp-worker   # started as: binary --shepherd=.. --supervisor_id=.. args
//     args: [--backend=cpu, --threads=2]
//     grace_ms: 10000               # SIGTERM -> SIGKILL for restart/drain commands
//     healthy_after_ms: 60000       # up this long = healthy: backoff starts over
//                                   # (an exit after a completed round restarts at once)
//     backoff: {initial_ms: 1000, multiplier: 2.0, max_ms: 30000, jitter: 0.2}
//   reconnect:                      # to the shepherd
//     backoff: {initial_ms: 500, multiplier: 2.0, max_ms: 10000, jitter: 0.2}
//     connect_timeout_ms: 5000      # to connect and get the shepherd's welcome
//
// Errors name the file, line and column, as for job files and shepherd.yaml (one parser:
// pcp/config/yaml_fields.h): "supervisor.yaml:4:3: unknown key 'binay' in section 'worker'
// (did you mean 'binary'?); valid keys: ...".
//
// Every key is also a flag, generated from the same table (pcp/config/command_line.h):
// --set worker.backoff.max_ms=5000 or --worker_backoff_max_ms=5000 ('.' as '_'), applied
// after the file in command-line order; older spellings stay as aliases (--token_source,
// --healthy_after_ms, --backoff_initial_ms, --backoff_multiplier, --backoff_max_ms,
// --backoff_jitter, --reconnect_initial_ms, --reconnect_max_ms):
//
//   std::vector<yaml_fields::Override> overrides;
//   PCP_RETURN_IF_ERROR(SupervisorKeyFlags().Extract(argc, argv, is_absl_flag, rest, overrides));
//   PCP_ASSIGN_OR_RETURN(SupervisorConfig config, SupervisorConfigFromCommandLine(path, overrides));
#ifndef PCP_SUPERVISOR_SUPERVISOR_CONFIG_H_
#define PCP_SUPERVISOR_SUPERVISOR_CONFIG_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "pcp/auth/tls_credentials.h"
#include "pcp/base/backoff.h"
#include "pcp/config/command_line.h"

namespace pcp::supervisor {

struct WorkerConfig {
  std::string binary;
  std::vector<std::string> args;
  absl::Duration grace = absl::Seconds(10);
  absl::Duration healthy_after = absl::Seconds(60);
  BackoffOptions backoff{.initial = absl::Seconds(1), .multiplier = 2, .max = absl::Seconds(30), .jitter = 0.2};
};

struct ReconnectConfig {
  BackoffOptions backoff{.initial = absl::Milliseconds(500), .multiplier = 2, .max = absl::Seconds(10), .jitter = 0.2};
  absl::Duration connect_timeout = absl::Seconds(5);
};

struct SupervisorConfig {
  std::string shepherd = "127.0.0.1:7070";
  std::string supervisor_id;
  std::string state_dir;
  auth::TlsFiles tls;        // as written (credential:NAME kept: the worker resolves it too)
  std::string token_source;  // a pcp/auth/secret.h source; "" = no token
  absl::Duration grace = absl::Seconds(10);
  std::string metrics_listen = "127.0.0.1:9471";
  WorkerConfig worker;
  ReconnectConfig reconnect;
};

// Parses YAML text; `file_name` prefixes error messages.
[[nodiscard]] absl::StatusOr<SupervisorConfig> ParseSupervisorConfig(absl::string_view yaml_text,
                                                                     absl::string_view file_name);
// Reads and parses the file at `path`.
[[nodiscard]] absl::StatusOr<SupervisorConfig> LoadSupervisorConfig(absl::string_view path);

// Checks the whole configuration (after flags were applied): a shepherd address, a worker
// binary, sane durations and backoff settings, a valid supervisor_id if one is set.
[[nodiscard]] absl::Status ValidateSupervisorConfig(const SupervisorConfig& config);

// The flags of every key of supervisor.yaml, and the older spellings.
[[nodiscard]] const yaml_fields::KeyFlags& SupervisorKeyFlags();
// For --help: every key flag, then the defaults as supervisor.yaml.
[[nodiscard]] std::string SupervisorFlagsHelp();
// The file at `config_path` (defaults when empty), then `overrides` in order, then
// ValidateSupervisorConfig. A bad key or value is InvalidArgument beginning with the flag as
// given: "--set worker.binay=x: unknown key 'binay' in section 'worker' (did you mean ...".
[[nodiscard]] absl::StatusOr<SupervisorConfig> SupervisorConfigFromCommandLine(
    absl::string_view config_path, absl::Span<const yaml_fields::Override> overrides);

}  // namespace pcp::supervisor

#endif  // PCP_SUPERVISOR_SUPERVISOR_CONFIG_H_

// pcp-worker's command line, declared once as a field table (pcp/config/yaml_fields.h) over
// the worker's options: each row is one key, and the key is the flag (pcp/config/command_line.h):
// --shepherd=HOST:PORT, --backoff_initial_ms=500 (key backoff.initial_ms), --tls_ca=FILE
// (tls.ca), --link_up_mbit=10 (link.up_mbit), or --set KEY=VALUE for any of them.
//
//   PCP_ASSIGN_OR_RETURN(WorkerSettings settings, WorkerSettingsFromCommandLine(argc, argv, usage));
//   Worker::Create(settings.options) ...
#ifndef PCP_SERVICES_WORKER_WORKER_FLAGS_H_
#define PCP_SERVICES_WORKER_WORKER_FLAGS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "pcp/config/command_line.h"
#include "pcp/worker/worker.h"

namespace pcp::worker {

// What the command line sets: the worker's options and the process's own settings.
struct WorkerSettings {
  WorkerOptions options;
  std::string token_source;  // env:NAME, file:PATH or credential:NAME; read into options.credentials.token
  std::string log_level = "info";
  std::string metrics_listen;  // "" = no metrics server
  std::string metrics_address_file;
};

// The flags of every key, and the older spellings (--tls_refresh_s).
[[nodiscard]] const yaml_fields::KeyFlags& WorkerKeyFlags();
// For --help: every key flag, then the defaults.
[[nodiscard]] std::string WorkerFlagsHelp();
// Defaults (options.incarnation from $PCP_WORKER_INCARNATION, else 1), then `overrides` in
// order. InvalidArgument naming the flag for a bad key or value. Secrets and files are not
// read here (main resolves --tls_* and --token_source).
[[nodiscard]] absl::StatusOr<WorkerSettings> WorkerSettingsFromOverrides(
    absl::Span<const yaml_fields::Override> overrides);
// Sets the usage message, parses the command line (absl's flags too) and applies it.
[[nodiscard]] absl::StatusOr<WorkerSettings> WorkerSettingsFromCommandLine(int argc, char** argv,
                                                                           absl::string_view usage);

}  // namespace pcp::worker

#endif  // PCP_SERVICES_WORKER_WORKER_FLAGS_H_

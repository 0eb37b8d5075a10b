// The shepherd's own settings (not a job's): where it listens, where it keeps its state,
// heartbeat timing. Read from a YAML file (`pcp-shepherd --config shepherd.yaml`, see
// config/shepherd.yaml); every key is also a flag, generated from the same table
// (pcp/config/command_line.h): --max_jobs=10, --tls_ca=FILE ('.' as '_') or --set KEY=VALUE,
// applied after the file in command-line order.
//
//   PCP_ASSIGN_OR_RETURN(ShepherdConfig config, LoadShepherdConfig("config/shepherd.yaml"));
//   config.listen = "127.0.0.1:0";                    // a flag's override
//   PCP_RETURN_IF_ERROR(config.Validate());
//
// Keys (all optional):
//   listen: "127.0.0.1:7070"       address:port for every gRPC service; port 0 = any free port
//   state_dir: "state/shepherd"    jobs, checkpoints; created if missing
//   heartbeat_interval_ms: 1000    both ends of every stream send a heartbeat this often
//   heartbeat_timeout_ms: 3000     silence this long = the peer is dead (> interval)
//   chunk_bytes: 1048576           data per chunk message sent (128 KiB..1 MiB)
//   max_chunk_bytes: 1048576       largest chunk data accepted from a peer (<= 1 MiB)
//   round_start_grace_ms: 2000     how long a round waits for missing workers before it
//                                  starts with the ones that are ready
//   eval_threads: 1                CPU threads for the shepherd's validation-loss estimates
//                                  and sampling (0 = all cores)
//   log_level: info                trace|debug|info|warn|error
//   metrics_listen: "127.0.0.1:9470"  Prometheus /metrics address; port 0 = any free port
//                                  (logged); "" = no metrics server
// Admission (what a caller may make the shepherd do; docs/operations.md#admission-and-limits):
//   data_roots: [<PCP_DATA_DIR>]   folders a job's data must resolve inside (DataRoots,
//                                  pcp/training/data_roots.h); [] = no data may be submitted
//   max_data_file_bytes: 1 GiB     largest data file a job may name
//   worker_memory_bytes: 0         memory budget of one worker for a job's estimate
//                                  (job_memory.h); 0 = half of this machine's memory
//   shepherd_memory_bytes: 0       the same for the shepherd's share of a job
//   max_jobs: 1000                 jobs kept (finished ones pruned oldest first beyond)
//   max_queued_jobs: 100           queued jobs; SubmitJob past it: RESOURCE_EXHAUSTED
//   max_job_start_attempts: 3      starts without a completed round before the job fails
//   max_job_yaml_bytes: 262144     largest job file SubmitJob takes (INVALID_ARGUMENT past it;
//                                  at most 4 MiB, the largest message the shepherd receives)
//   max_finished_job_yamls: 100    finished jobs (newest first) that keep their job file;
//                                  older ones keep only their record (job_manager.h)
//   max_admin_calls: 64            Admin calls in flight (beyond: RESOURCE_EXHAUSTED)
//   max_watch_streams: 64          concurrent WatchJob streams
//   max_watch_queue: 256           events queued for one slow watcher before it is dropped
//   max_streams_per_connection: 100  HTTP/2 streams one connection may open at once
//   grpc_memory_bytes: 1 GiB       gRPC's own buffers (grpc::ResourceQuota)
//   max_metadata_bytes: 8 KiB      a call's request headers (metadata) at most; a larger
//                                  header list is RESOURCE_EXHAUSTED (GRPC_ARG_MAX_METADATA_SIZE,
//                                  in [1 KiB, 1 MiB]). gRPC 1.51 applies it once the client has
//                                  acknowledged the server's SETTINGS (gRPC clients do before
//                                  their first call); before that HTTP/2's 16 MiB holds, and a
//                                  header is read whole before it is judged
//                                  (docs/operations.md#admission-and-limits)
//   transport_receive_bytes: 256 MiB  receive budget for what the workers' streams may have
//                                  in flight to the shepherd (<= grpc_memory_bytes) ...
//   transport_workers: 64          ... shared by this many streams: each stream's announced
//                                  HTTP/2 window is ReceiveWindowBytes() =
//                                  transport_receive_bytes / transport_workers clamped to
//                                  [64 KiB, 16 MiB]. gRPC 1.51 with BDP probing off receives
//                                  about one message + 64 KiB per stream per RTT whatever the
//                                  window (measured; pcp/rpc/channel_options.h). What does
//                                  bound the shepherd's receive memory is the Δ chunk size
//                                  (about 2.5x a chunk per stream of live buffers, 5x in RSS,
//                                  measured), so the chunks the shepherd accepts
//                                  (JoinAck.max_chunk_bytes, which workers send) are
//                                  AcceptedChunkBytes() = transport_receive_bytes /
//                                  (4 x transport_workers) clamped to [128 KiB,
//                                  max_chunk_bytes]: 1 MiB by default, 256 KiB from 256
//                                  workers, 128 KiB for 256 workers on a 128 MiB budget
//   forget_supervisors_after_s: 86400  a supervisor gone this long leaves ListWorkers
// The listener (docs/operations.md#listener-watchdog):
//   handshake_timeout_ms: 20000    a connection that has not finished its TLS handshake and
//                                  HTTP/2 preface by then is closed (gRPC's default: 120 s), so
//                                  idle unauthenticated connections hold descriptors that long
//   listener_probe_interval_ms: 10000  a loopback probe through the listening port this often
//                                  (ListenerWatchdog); 0 = off (under systemd's WatchdogSec=
//                                  at least every WatchdogSec/3)
//   listener_probe_failures: 3     failed probes in a row before the shepherd exits 1 (after
//                                  checkpointing, as on SIGTERM) so that systemd restarts it
// Errors are one line "FILE:LINE:COL: key: problem", as for job files (one parser:
// pcp/config/yaml_fields.h), also for checks across keys (heartbeat_timeout_ms > interval).
#ifndef PCP_SHEPHERD_SHEPHERD_CONFIG_H_
#define PCP_SHEPHERD_SHEPHERD_CONFIG_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "pcp/auth/authenticator.h"
#include "pcp/auth/tls_credentials.h"
#include "pcp/config/command_line.h"
#include "pcp/training/data_roots.h"
#include "pcp/training/job_memory.h"

namespace pcp::shepherd {

struct ShepherdConfig {
  std::string listen = "127.0.0.1:7070";
  std::string state_dir = "state/shepherd";
  int64_t heartbeat_interval_ms = 1000;
  int64_t heartbeat_timeout_ms = 3000;
  // Transport: TLS on the listener when tls.cert/key are set; mTLS (client certificates
  // required, verified against tls.ca) when tls.ca is set too. Paths may be credential:NAME.
  auth::TlsFiles tls;
  // Plaintext on a non-loopback listen address is refused unless this is true.
  bool insecure = false;
  // Who may call what (pcp/auth/authenticator.h): certificate identities and bearer-token
  // hashes with their roles. None at all = no authentication (a loopback cluster).
  auth::AuthGrants auth;
  int64_t chunk_bytes = 1 << 20;
  int64_t max_chunk_bytes = 1 << 20;
  int64_t round_start_grace_ms = 2000;
  int64_t eval_threads = 1;
  std::string log_level = "info";
  std::string metrics_listen = "127.0.0.1:9470";
  // Admission.
  std::vector<std::string> data_roots = {DefaultDataRoot()};
  int64_t max_data_file_bytes = kDefaultMaxDataFileBytes;
  int64_t worker_memory_bytes = 0;
  int64_t shepherd_memory_bytes = 0;
  int64_t max_jobs = 1000;
  int64_t max_queued_jobs = 100;
  int64_t max_job_start_attempts = 3;
  int64_t max_job_yaml_bytes = int64_t{256} << 10;
  int64_t max_finished_job_yamls = 100;
  int64_t max_admin_calls = 64;
  int64_t max_watch_streams = 64;
  int64_t max_watch_queue = 256;
  int64_t max_streams_per_connection = 100;
  int64_t grpc_memory_bytes = int64_t{1} << 30;
  int64_t max_metadata_bytes = 8192;
  int64_t transport_receive_bytes = int64_t{256} << 20;
  int64_t transport_workers = 64;
  int64_t forget_supervisors_after_s = 86400;
  // The listener.
  int64_t handshake_timeout_ms = 20000;
  int64_t listener_probe_interval_ms = 10000;
  int64_t listener_probe_failures = 3;

  // The memory budgets with 0 replaced by half of this machine's physical memory.
  MemoryBudgets EffectiveMemoryBudgets() const;

  // The HTTP/2 receive window the shepherd announces per stream (bytes): the transport
  // budget divided among transport_workers streams, clamped to [64 KiB, 16 MiB].
  int ReceiveWindowBytes() const;
  // The largest Δ chunk the shepherd accepts and announces (JoinAck.max_chunk_bytes; workers
  // send chunks of this size): the transport budget over 4 x transport_workers, clamped to
  // [kMinChunkBytes, max_chunk_bytes].
  int64_t AcceptedChunkBytes() const;

  // InvalidArgument naming the key for a value out of range.
  absl::Status Validate() const;
};

// Parses YAML text; `file_name` is used in messages. Unknown keys are errors.
absl::StatusOr<ShepherdConfig> ParseShepherdConfig(absl::string_view yaml_text, absl::string_view file_name);
absl::StatusOr<ShepherdConfig> LoadShepherdConfig(const std::string& path);

// The flags of every key of shepherd.yaml (pcp/config/command_line.h).
[[nodiscard]] const yaml_fields::KeyFlags& ShepherdKeyFlags();
// For --help: every key flag, then the defaults as shepherd.yaml.
[[nodiscard]] std::string ShepherdFlagsHelp();
// The file at `config_path` (defaults when empty), then `overrides` in order, then
// Validate(). A bad key or value is InvalidArgument beginning with the flag as given:
// "--max_jobs=x: max_jobs: expected an integer, got 'x'".
[[nodiscard]] absl::StatusOr<ShepherdConfig> ShepherdConfigFromCommandLine(
    const std::string& config_path, absl::Span<const yaml_fields::Override> overrides);

}  // namespace pcp::shepherd

#endif  // PCP_SHEPHERD_SHEPHERD_CONFIG_H_

#include "pcp/shepherd/shepherd_config.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "pcp/auth/config_fields.h"
#include "pcp/auth/token.h"
#include "pcp/base/file.h"
#include "pcp/base/status_macros.h"
#include "pcp/config/yaml_fields.h"
#include "pcp/metrics/metrics_server.h"
#include "pcp/rpc/channel_options.h"
#include "pcp/rpc/tensor_chunks.h"

namespace pcp::shepherd {
namespace {

// A bound on transport_workers, so that a typo is an error rather than a 64 KiB window.
constexpr int64_t kMaxTransportWorkers = 1 << 20;

using yaml_fields::Field;
using yaml_fields::IntField;
using yaml_fields::IntRange;
using yaml_fields::StringField;
using yaml_fields::StringListField;

// Every key of shepherd.yaml, once. Ranges are checked by ShepherdConfig::Validate (which
// also sees the flags' overrides); the table only reads values.
const std::vector<Field<ShepherdConfig>>& Fields() {
  static const auto* fields = new std::vector<Field<ShepherdConfig>>{
      StringField("listen", &ShepherdConfig::listen, /*allow_empty=*/false),
      StringField("state_dir", &ShepherdConfig::state_dir, /*allow_empty=*/false),
      IntField("heartbeat_interval_ms", &ShepherdConfig::heartbeat_interval_ms, IntRange{}),
      IntField("heartbeat_timeout_ms", &ShepherdConfig::heartbeat_timeout_ms, IntRange{}),
      IntField("chunk_bytes", &ShepherdConfig::chunk_bytes, IntRange{}),
      IntField("max_chunk_bytes", &ShepherdConfig::max_chunk_bytes, IntRange{}),
      IntField("round_start_grace_ms", &ShepherdConfig::round_start_grace_ms, IntRange{}),
      IntField("eval_threads", &ShepherdConfig::eval_threads, IntRange{}),
      StringField("log_level", &ShepherdConfig::log_level, /*allow_empty=*/false),
      StringField("metrics_listen", &ShepherdConfig::metrics_listen, /*allow_empty=*/true),
      // Admission.
      StringListField("data_roots", &ShepherdConfig::data_roots),
      IntField("max_data_file_bytes", &ShepherdConfig::max_data_file_bytes, IntRange{}),
      IntField("worker_memory_bytes", &ShepherdConfig::worker_memory_bytes, IntRange{}),
      IntField("shepherd_memory_bytes", &ShepherdConfig::shepherd_memory_bytes, IntRange{}),
      IntField("max_jobs", &ShepherdConfig::max_jobs, IntRange{}),
      IntField("max_queued_jobs", &ShepherdConfig::max_queued_jobs, IntRange{}),
      IntField("max_job_start_attempts", &ShepherdConfig::max_job_start_attempts, IntRange{}),
      IntField("max_job_yaml_bytes", &ShepherdConfig::max_job_yaml_bytes, IntRange{}),
      IntField("max_finished_job_yamls", &ShepherdConfig::max_finished_job_yamls, IntRange{}),
      IntField("max_admin_calls", &ShepherdConfig::max_admin_calls, IntRange{}),
      IntField("max_watch_streams", &ShepherdConfig::max_watch_streams, IntRange{}),
      IntField("max_watch_queue", &ShepherdConfig::max_watch_queue, IntRange{}),
      IntField("max_streams_per_connection", &ShepherdConfig::max_streams_per_connection, IntRange{}),
      IntField("grpc_memory_bytes", &ShepherdConfig::grpc_memory_bytes, IntRange{}),
      IntField("max_metadata_bytes", &ShepherdConfig::max_metadata_bytes, IntRange{}),
      IntField("transport_receive_bytes", &ShepherdConfig::transport_receive_bytes, IntRange{}),
      IntField("transport_workers", &ShepherdConfig::transport_workers, IntRange{}),
      IntField("forget_supervisors_after_s", &ShepherdConfig::forget_supervisors_after_s, IntRange{}),
      // The listener.
      IntField("handshake_timeout_ms", &ShepherdConfig::handshake_timeout_ms, IntRange{}),
      IntField("listener_probe_interval_ms", &ShepherdConfig::listener_probe_interval_ms, IntRange{}),
      IntField("listener_probe_failures", &ShepherdConfig::listener_probe_failures, IntRange{}),
      yaml_fields::SectionField("tls", &ShepherdConfig::tls, &auth::TlsFields()),
      yaml_fields::BoolField("insecure", &ShepherdConfig::insecure),
      yaml_fields::SectionField("auth", &ShepherdConfig::auth, &auth::AuthGrantsFields()),
  };
  return *fields;
}

}  // namespace

absl::Status ShepherdConfig::Validate() const {
  auto bad = [](absl::string_view key, absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat(key, ": ", why));
  };
  if (listen.empty() || listen.find(':') == std::string::npos) return bad("listen", "expected HOST:PORT");
  if (state_dir.empty()) return bad("state_dir", "must not be empty");
  if (heartbeat_interval_ms < 10) return bad("heartbeat_interval_ms", "must be >= 10");
  if (heartbeat_timeout_ms <= heartbeat_interval_ms) {
    return bad("heartbeat_timeout_ms", "must be greater than heartbeat_interval_ms");
  }
  if (chunk_bytes < kMinChunkBytes || chunk_bytes > kMaxChunkBytes) {
    return bad("chunk_bytes", absl::StrCat("must be in [", kMinChunkBytes, ", ", kMaxChunkBytes, "]"));
  }
  if (max_chunk_bytes < chunk_bytes || max_chunk_bytes > kMaxChunkBytes) {
    return bad("max_chunk_bytes", absl::StrCat("must be in [chunk_bytes, ", kMaxChunkBytes, "]"));
  }
  if (round_start_grace_ms < 0) return bad("round_start_grace_ms", "must be >= 0");
  if (eval_threads < 0) return bad("eval_threads", "must be >= 0");
  static const std::set<std::string> kLevels = {"trace", "debug", "info", "warn", "error"};
  if (!kLevels.count(log_level)) return bad("log_level", "expected trace, debug, info, warn or error");
  for (const auth::IdentityGrant& g : auth.identities) {
    if (g.identity.empty()) return bad("auth.identities", "an entry has an empty identity");
    if (g.roles.empty()) return bad("auth.identities", absl::StrCat("'", g.identity, "' has no roles"));
  }
  for (const auth::TokenGrant& t : auth.tokens) {
    if (t.name.empty()) return bad("auth.tokens", "an entry has an empty name");
    if (t.roles.empty()) return bad("auth.tokens", absl::StrCat("'", t.name, "' has no roles"));
    if (absl::Status s = auth::ValidateTokenSha256(t.sha256); !s.ok()) {
      return bad("auth.tokens", absl::StrCat("'", t.name, "': sha256: ", s.message()));
    }
  }
  if (!tls.ca.empty() && auth.empty()) {
    return bad("tls.ca", "mTLS needs auth.identities mapping certificate identities to roles");
  }
  if (tls.refresh_interval_s < 1) return bad("tls.refresh_interval_s", "must be >= 1");
  if (!metrics::ValidateMetricsListen(metrics_listen).ok()) {
    return bad("metrics_listen", "expected HOST:PORT (port 0 = any free port) or \"\" (no metrics)");
  }
  for (const std::string& root : data_roots) {
    if (root.empty()) return bad("data_roots", "a root is an empty path");
  }
  struct Positive {
    absl::string_view key;
    int64_t value;
  };
  for (const Positive& p :
       {Positive{"max_data_file_bytes", max_data_file_bytes}, Positive{"max_jobs", max_jobs},
        Positive{"max_queued_jobs", max_queued_jobs}, Positive{"max_job_start_attempts", max_job_start_attempts},
        Positive{"max_admin_calls", max_admin_calls}, Positive{"max_watch_streams", max_watch_streams},
        Positive{"max_watch_queue", max_watch_queue},
        Positive{"max_streams_per_connection", max_streams_per_connection},
        Positive{"grpc_memory_bytes", grpc_memory_bytes},
        Positive{"forget_supervisors_after_s", forget_supervisors_after_s}}) {
    if (p.value < 1) return bad(p.key, "must be >= 1");
  }
  if (worker_memory_bytes < 0) return bad("worker_memory_bytes", "must be >= 0 (0 = half of the machine's memory)");
  if (shepherd_memory_bytes < 0) return bad("shepherd_memory_bytes", "must be >= 0 (0 = half of the machine's memory)");
  if (max_queued_jobs > max_jobs) return bad("max_queued_jobs", "must be <= max_jobs");
  if (max_metadata_bytes < 1024 || max_metadata_bytes > 1048576) {
    return bad("max_metadata_bytes", "must be in [1024, 1048576]");
  }
  if (max_job_yaml_bytes < 1 || max_job_yaml_bytes > kMaxReceiveMessageBytes) {
    return bad("max_job_yaml_bytes", absl::StrCat("must be in [1, ", kMaxReceiveMessageBytes,
                                                  "] (the largest message the shepherd receives)"));
  }
  if (max_finished_job_yamls < 0) return bad("max_finished_job_yamls", "must be >= 0");
  if (transport_receive_bytes < kMinStreamWindowBytes) {
    return bad("transport_receive_bytes",
               absl::StrCat("must be >= ", kMinStreamWindowBytes, " (one stream's smallest window)"));
  }
  if (transport_receive_bytes > grpc_memory_bytes) {
    // gRPC refuses streams (not shrinks windows) once its quota runs out: the quota must cover the budget.
    return bad("transport_receive_bytes", "must be <= grpc_memory_bytes");
  }
  if (handshake_timeout_ms < 100 || handshake_timeout_ms > 600000) {
    return bad("handshake_timeout_ms", "must be in [100, 600000]");
  }
  if (listener_probe_interval_ms != 0 && (listener_probe_interval_ms < 50 || listener_probe_interval_ms > 3600000)) {
    return bad("listener_probe_interval_ms", "must be 0 (off) or in [50, 3600000]");
  }
  if (listener_probe_failures < 1 || listener_probe_failures > 1000) {
    return bad("listener_probe_failures", "must be in [1, 1000]");
  }
  if (transport_workers < 1 || transport_workers > kMaxTransportWorkers) {
    return bad("transport_workers", absl::StrCat("must be in [1, ", kMaxTransportWorkers, "]"));
  }
  return absl::OkStatus();
}

int ShepherdConfig::ReceiveWindowBytes() const {
  return StreamWindowForBudget(transport_receive_bytes, transport_workers);
}

int64_t ShepherdConfig::AcceptedChunkBytes() const {
  const int64_t share = transport_receive_bytes / (4 * std::max<int64_t>(transport_workers, 1));
  return std::clamp(share, std::min(kMinChunkBytes, max_chunk_bytes), max_chunk_bytes);
}

MemoryBudgets ShepherdConfig::EffectiveMemoryBudgets() const {
  const long pages = sysconf(_SC_PHYS_PAGES);     // NOLINT(runtime/int): sysconf's type
  const long page_size = sysconf(_SC_PAGE_SIZE);  // NOLINT(runtime/int)
  const int64_t half = pages > 0 && page_size > 0 ? int64_t{pages} * page_size / 2 : int64_t{8} << 30;
  return MemoryBudgets{.worker_bytes = worker_memory_bytes > 0 ? worker_memory_bytes : half,
                       .shepherd_bytes = shepherd_memory_bytes > 0 ? shepherd_memory_bytes : half};
}

absl::StatusOr<ShepherdConfig> ParseShepherdConfig(absl::string_view yaml_text, absl::string_view file_name) {
  yaml_fields::Context ctx(file_name, "shepherd config");
  ShepherdConfig config;
  PCP_RETURN_IF_ERROR(yaml_fields::ParseDocument(yaml_text, Fields(), ctx, config));
  PCP_RETURN_IF_ERROR(ctx.Locate(config.Validate()));
  return config;
}

absl::StatusOr<ShepherdConfig> LoadShepherdConfig(const std::string& path) {
  PCP_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  return ParseShepherdConfig(text, path);
}

const yaml_fields::KeyFlags& ShepherdKeyFlags() {
  static const auto* flags = [] {
    // Every flag's name is its key's: no aliases to keep.
    absl::StatusOr<yaml_fields::KeyFlags> made = yaml_fields::KeyFlags::Create(yaml_fields::LeavesOf(Fields()), {});
    // A programmer's error (a flag name twice); shepherd_config_test calls this.
    if (!made.ok()) {
      std::fprintf(stderr, "%s\n", std::string(made.status().message()).c_str());
      std::abort();
    }
    return new yaml_fields::KeyFlags(*std::move(made));
  }();
  return *flags;
}

std::string ShepherdFlagsHelp() {
  return absl::StrCat(
      "Every key of shepherd.yaml is a flag, applied after --config in order: --set KEY=VALUE\n"
      "(KEY as in the file, e.g. tls.ca) or --KEY=VALUE with '_' for '.':\n",
      ShepherdKeyFlags().Help(), "Defaults, as shepherd.yaml:\n",
      yaml_fields::EmitMapping(Fields(), ShepherdConfig{}, 2), "\n");
}

absl::StatusOr<ShepherdConfig> ShepherdConfigFromCommandLine(const std::string& config_path,
                                                             absl::Span<const yaml_fields::Override> overrides) {
  ShepherdConfig config;
  if (!config_path.empty()) {
    PCP_ASSIGN_OR_RETURN(config, LoadShepherdConfig(config_path));
  }
  for (const yaml_fields::Override& o : overrides) {
    PCP_RETURN_IF_ERROR(yaml_fields::ApplyOverride(Fields(), o, config));
  }
  PCP_RETURN_IF_ERROR(yaml_fields::NameOverride(config.Validate(), overrides));
  return config;
}

}  // namespace pcp::shepherd

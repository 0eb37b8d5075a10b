#include "pcp/supervisor/supervisor_config.h"

#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "pcp/auth/config_fields.h"
#include "pcp/base/file.h"
#include "pcp/base/status_macros.h"
#include "pcp/config/yaml_fields.h"
#include "pcp/metrics/metrics_server.h"
#include "pcp/supervisor/supervisor_id.h"

namespace pcp::supervisor {
namespace {

using yaml_fields::Context;
using yaml_fields::Field;
using yaml_fields::IntRange;
using yaml_fields::kAtLeast0;
using yaml_fields::MillisField;
using yaml_fields::RealField;
using yaml_fields::RealRange;
using yaml_fields::SectionField;
using yaml_fields::StringField;
using yaml_fields::StringListField;

// Every key of supervisor.yaml, once. Ranges across keys (backoff max >= initial, ...) are
// checked by ValidateSupervisorConfig, which also sees the flags' overrides.
const std::vector<Field<BackoffOptions>>& BackoffFields() {
  static const auto* fields = new std::vector<Field<BackoffOptions>>{
      MillisField("initial_ms", &BackoffOptions::initial, kAtLeast0),
      RealField("multiplier", &BackoffOptions::multiplier, RealRange{}),
      MillisField("max_ms", &BackoffOptions::max, kAtLeast0),
      RealField("jitter", &BackoffOptions::jitter, RealRange{}),
  };
  return *fields;
}

const std::vector<Field<WorkerConfig>>& WorkerFields() {
  static const auto* fields = new std::vector<Field<WorkerConfig>>{
      StringField("binary", &WorkerConfig::binary, /*allow_empty=*/true),
      StringListField("args", &WorkerConfig::args),
      MillisField("grace_ms", &WorkerConfig::grace, kAtLeast0),
      MillisField("healthy_after_ms", &WorkerConfig::healthy_after, kAtLeast0),
      SectionField("backoff", &WorkerConfig::backoff, &BackoffFields()),
  };
  return *fields;
}

const std::vector<Field<ReconnectConfig>>& ReconnectFields() {
  static const auto* fields = new std::vector<Field<ReconnectConfig>>{
      SectionField("backoff", &ReconnectConfig::backoff, &BackoffFields()),
      MillisField("connect_timeout_ms", &ReconnectConfig::connect_timeout, kAtLeast0),
  };
  return *fields;
}

const std::vector<Field<SupervisorConfig>>& Fields() {
  static const auto* fields = new std::vector<Field<SupervisorConfig>>{
      StringField("shepherd", &SupervisorConfig::shepherd, /*allow_empty=*/false),
      StringField("supervisor_id", &SupervisorConfig::supervisor_id, /*allow_empty=*/true),
      StringField("state_dir", &SupervisorConfig::state_dir, /*allow_empty=*/true),
      SectionField("tls", &SupervisorConfig::tls, &auth::TlsFields()),
      StringField("token", &SupervisorConfig::token_source, /*allow_empty=*/true),
      MillisField("grace_ms", &SupervisorConfig::grace, kAtLeast0),
      StringField("metrics_listen", &SupervisorConfig::metrics_listen, /*allow_empty=*/true),
      SectionField("worker", &SupervisorConfig::worker, &WorkerFields()),
      SectionField("reconnect", &SupervisorConfig::reconnect, &ReconnectFields()),
  };
  return *fields;
}

// Flag spellings older than the generated ones (scripts, units and tests use them).
constexpr yaml_fields::Alias kLegacyFlags[] = {
    {"token_source", "token"},
    {"healthy_after_ms", "worker.healthy_after_ms"},
    {"backoff_initial_ms", "worker.backoff.initial_ms"},
    {"backoff_multiplier", "worker.backoff.multiplier"},
    {"backoff_max_ms", "worker.backoff.max_ms"},
    {"backoff_jitter", "worker.backoff.jitter"},
    {"reconnect_initial_ms", "reconnect.backoff.initial_ms"},
    {"reconnect_max_ms", "reconnect.backoff.max_ms"},
};

// Every value in range; messages begin with the qualified key (for Context::Locate).
absl::Status ValidateValues(const SupervisorConfig& config) {
  if (config.shepherd.empty()) {
    return absl::InvalidArgumentError("shepherd: no shepherd address (host:port) given");
  }
  if (!config.supervisor_id.empty()) {
    if (absl::Status s = ValidateSupervisorId(config.supervisor_id); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("supervisor_id: ", s.message()));
    }
  }
  if (config.grace <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("grace_ms: must be > 0");
  }
  if (config.worker.grace <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("worker.grace_ms: must be > 0");
  }
  if (!metrics::ValidateMetricsListen(config.metrics_listen).ok()) {
    return absl::InvalidArgumentError(
        "metrics_listen: expected HOST:PORT (port 0 = any free port) or \"\" (no metrics)");
  }
  if (config.reconnect.connect_timeout <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("reconnect.connect_timeout_ms: must be > 0");
  }
  PCP_RETURN_IF_ERROR(ValidateBackoffOptions(config.worker.backoff, "worker.backoff"));
  PCP_RETURN_IF_ERROR(ValidateBackoffOptions(config.reconnect.backoff, "reconnect.backoff"));
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<SupervisorConfig> ParseSupervisorConfig(absl::string_view yaml_text, absl::string_view file_name) {
  Context ctx(file_name, "supervisor config");
  SupervisorConfig config;
  PCP_RETURN_IF_ERROR(yaml_fields::ParseDocument(yaml_text, Fields(), ctx, config));
  // Values are checked here, with their positions; what the file may leave to flags
  // (worker.binary) is checked by ValidateSupervisorConfig once flags are applied.
  PCP_RETURN_IF_ERROR(ctx.Locate(ValidateValues(config)));
  return config;
}

absl::StatusOr<SupervisorConfig> LoadSupervisorConfig(absl::string_view path) {
  PCP_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  return ParseSupervisorConfig(text, path);
}

absl::Status ValidateSupervisorConfig(const SupervisorConfig& config) {
  if (config.worker.binary.empty()) {
    return absl::InvalidArgumentError("worker.binary: no worker binary given");
  }
  return ValidateValues(config);
}

const yaml_fields::KeyFlags& SupervisorKeyFlags() {
  static const auto* flags = [] {
    absl::StatusOr<yaml_fields::KeyFlags> made =
        yaml_fields::KeyFlags::Create(yaml_fields::LeavesOf(Fields()), kLegacyFlags);
    // A programmer's error (an alias of no key, a name twice); supervisor_config_test calls this.
    if (!made.ok()) {
      std::fprintf(stderr, "%s\n", std::string(made.status().message()).c_str());
      std::abort();
    }
    return new yaml_fields::KeyFlags(*std::move(made));
  }();
  return *flags;
}

std::string SupervisorFlagsHelp() {
  return absl::StrCat(
      "Every key of supervisor.yaml is a flag, applied after --config in order: --set KEY=VALUE\n"
      "(KEY as in the file, e.g. worker.backoff.max_ms) or --KEY=VALUE with '_' for '.':\n",
      SupervisorKeyFlags().Help(), "Defaults, as supervisor.yaml:\n",
      yaml_fields::EmitMapping(Fields(), SupervisorConfig{}, 2), "\n");
}

absl::StatusOr<SupervisorConfig> SupervisorConfigFromCommandLine(absl::string_view config_path,
                                                                 absl::Span<const yaml_fields::Override> overrides) {
  SupervisorConfig config;
  if (!config_path.empty()) {
    PCP_ASSIGN_OR_RETURN(config, LoadSupervisorConfig(config_path));
  }
  for (const yaml_fields::Override& o : overrides) {
    PCP_RETURN_IF_ERROR(yaml_fields::ApplyOverride(Fields(), o, config));
  }
  PCP_RETURN_IF_ERROR(yaml_fields::NameOverride(ValidateSupervisorConfig(config), overrides));
  return config;
}

}  // namespace pcp::supervisor

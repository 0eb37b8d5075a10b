#include "worker_flags.h"

#include <cstdio>
#include <cstdlib>
#include <utility>

#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "pcp/auth/config_fields.h"
#include "pcp/base/status_macros.h"
#include "pcp/config/yaml_fields.h"

namespace pcp::worker {
namespace {

using yaml_fields::Field;
using yaml_fields::IntRange;
using yaml_fields::Lift;
using yaml_fields::RealRange;

const std::vector<Field<BackoffOptions>>& BackoffFields() {
  static const auto* fields = new std::vector<Field<BackoffOptions>>{
      yaml_fields::MillisField("initial_ms", &BackoffOptions::initial, yaml_fields::kAtLeast1),
      yaml_fields::MillisField("max_ms", &BackoffOptions::max, yaml_fields::kAtLeast1),
  };
  return *fields;
}

const std::vector<Field<netem::EmulatedLink>>& LinkFields() {
  static const auto* fields = new std::vector<Field<netem::EmulatedLink>>{
      yaml_fields::RealField("up_mbit", &netem::EmulatedLink::up_mbit, RealRange{}),
      yaml_fields::RealField("down_mbit", &netem::EmulatedLink::down_mbit, RealRange{}),
      yaml_fields::RealField("rtt_ms", &netem::EmulatedLink::rtt_ms, RealRange{}),
  };
  return *fields;
}

// Every key of the worker's command line, once. The link's rates are checked by
// netem::ValidateEmulatedLink, the TLS files by auth::ResolveTlsFiles (in main).
const std::vector<Field<WorkerSettings>>& Fields() {
  using O = WorkerOptions;
  constexpr auto kOptions = &WorkerSettings::options;
  static const auto* fields = new std::vector<Field<WorkerSettings>>{
      Lift(kOptions, yaml_fields::StringField("shepherd", &O::shepherd, /*allow_empty=*/false)),
      Lift(kOptions, yaml_fields::StringField("supervisor_id", &O::supervisor_id, /*allow_empty=*/true)),
      Lift(kOptions, yaml_fields::IntField("incarnation", &O::incarnation, yaml_fields::kAtLeast1)),
      Lift(kOptions, yaml_fields::StringField("backend", &O::backend, /*allow_empty=*/false)),
      Lift(kOptions, yaml_fields::IntField("threads", &O::threads, yaml_fields::kAtLeast0)),
      Lift(kOptions, yaml_fields::StringField("cache_dir", &O::cache_dir, /*allow_empty=*/true)),
      Lift(kOptions,
           Lift(&O::credentials, yaml_fields::SectionField("tls", &auth::ClientCredentials::tls, &auth::TlsFields()))),
      yaml_fields::StringField("token_source", &WorkerSettings::token_source, /*allow_empty=*/true),
      Lift(kOptions, yaml_fields::SectionField("backoff", &O::backoff, &BackoffFields())),
      Lift(kOptions, yaml_fields::IntField("join_timeout_ms", &O::join_timeout_ms, yaml_fields::kAtLeast1)),
      Lift(kOptions, yaml_fields::StringListField("data_roots", &O::data_roots)),
      Lift(kOptions, yaml_fields::IntField("max_data_file_bytes", &O::max_data_file_bytes, yaml_fields::kAtLeast1)),
      yaml_fields::StringField("log_level", &WorkerSettings::log_level, /*allow_empty=*/false),
      yaml_fields::StringField("metrics_listen", &WorkerSettings::metrics_listen, /*allow_empty=*/true),
      yaml_fields::StringField("metrics_address_file", &WorkerSettings::metrics_address_file, /*allow_empty=*/true),
      Lift(kOptions, yaml_fields::SectionField("link", &O::link, &LinkFields())),
      // TESTING ONLY: corrupt the Δs sent (pcp/worker/delta_fault.h).
      Lift(kOptions, yaml_fields::StringField("fault_delta", &O::fault_delta, /*allow_empty=*/true)),
      // TESTING ONLY: slow each inner step by this factor (pcp/worker/round_runner.h).
      Lift(kOptions, yaml_fields::RealField("fault_slow_factor", &O::fault_slow_factor, RealRange{1.0, 1000.0})),
      // TESTING ONLY: draw θ₀ from the wrong seed (pcp/worker/worker.h).
      Lift(kOptions, yaml_fields::BoolField("fault_init", &O::fault_init)),
  };
  return *fields;
}

constexpr yaml_fields::Alias kLegacyFlags[] = {{"tls_refresh_s", "tls.refresh_interval_s"}};

}  // namespace

const yaml_fields::KeyFlags& WorkerKeyFlags() {
  static const auto* flags = [] {
    absl::StatusOr<yaml_fields::KeyFlags> made =
        yaml_fields::KeyFlags::Create(yaml_fields::LeavesOf(Fields()), kLegacyFlags);
    if (!made.ok()) {  // a programmer's error; worker_units_test calls this
      std::fprintf(stderr, "%s\n", std::string(made.status().message()).c_str());
      std::abort();
    }
    return new yaml_fields::KeyFlags(*std::move(made));
  }();
  return *flags;
}

std::string WorkerFlagsHelp() {
  return absl::StrCat("Flags (--KEY=VALUE, '_' for '.' in KEY, or --set KEY=VALUE; later wins):\n",
                      WorkerKeyFlags().Help(), "Defaults:\n", yaml_fields::EmitMapping(Fields(), WorkerSettings{}, 2),
                      "\n");
}

absl::StatusOr<WorkerSettings> WorkerSettingsFromOverrides(absl::Span<const yaml_fields::Override> overrides) {
  WorkerSettings settings;
  settings.options.incarnation = 1;
  if (const char* env = std::getenv("PCP_WORKER_INCARNATION"); env != nullptr) {
    uint64_t n = 0;
    if (absl::SimpleAtoi(env, &n) && n > 0) settings.options.incarnation = n;
  }
  for (const yaml_fields::Override& o : overrides) {
    PCP_RETURN_IF_ERROR(yaml_fields::ApplyOverride(Fields(), o, settings));
  }
  // A longest reconnect delay below the first one means the first one.
  settings.options.backoff.max = std::max(settings.options.backoff.max, settings.options.backoff.initial);
  return settings;
}

absl::StatusOr<WorkerSettings> WorkerSettingsFromCommandLine(int argc, char** argv, absl::string_view usage) {
  absl::SetProgramUsageMessage(absl::StrCat(usage, "\n\n", WorkerFlagsHelp()));
  std::vector<char*> rest;
  std::vector<yaml_fields::Override> overrides;
  PCP_RETURN_IF_ERROR(WorkerKeyFlags().Extract(argc, argv, yaml_fields::IsAbslFlag, rest, overrides));
  std::vector<char*> positional = absl::ParseCommandLine(static_cast<int>(rest.size()), rest.data());
  if (positional.size() > 1) {
    return absl::InvalidArgumentError(absl::StrCat("unexpected argument '", positional[1], "'"));
  }
  return WorkerSettingsFromOverrides(overrides);
}

}  // namespace pcp::worker

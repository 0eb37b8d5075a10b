#include "pcp/shepherd/shepherd_config.h"

#include <set>
#include <vector>

#include "absl/strings/str_cat.h"
#include "pcp/base/file.h"
#include "pcp/base/status_macros.h"
#include "pcp/config/yaml_fields.h"
#include "pcp/metrics/metrics_server.h"
#include "pcp/rpc/tensor_chunks.h"

namespace pcp::shepherd {
namespace {

using yaml_fields::Field;
using yaml_fields::IntField;
using yaml_fields::IntRange;
using yaml_fields::StringField;

// Every key of shepherd.yaml, once. Ranges are checked by ShepherdConfig::Validate (which
// also sees the flags' overrides); the table only reads values.
const std::vector<Field<ShepherdConfig>>& Fields() {
  static const auto* fields = new std::vector<Field<ShepherdConfig>>{
      StringField("listen", &ShepherdConfig::listen, /*allow_empty=*/false),
      StringField("state_dir", &ShepherdConfig::state_dir, /*allow_empty=*/false),
      IntField("heartbeat_interval_ms", &ShepherdConfig::heartbeat_interval_ms, IntRange{}),
      IntField("heartbeat_timeout_ms", &ShepherdConfig::heartbeat_timeout_ms, IntRange{}),
      StringField("auth_token", &ShepherdConfig::auth_token, /*allow_empty=*/true),
      IntField("chunk_bytes", &ShepherdConfig::chunk_bytes, IntRange{}),
      IntField("max_chunk_bytes", &ShepherdConfig::max_chunk_bytes, IntRange{}),
      IntField("round_start_grace_ms", &ShepherdConfig::round_start_grace_ms, IntRange{}),
      IntField("eval_threads", &ShepherdConfig::eval_threads, IntRange{}),
      StringField("log_level", &ShepherdConfig::log_level, /*allow_empty=*/false),
      StringField("metrics_listen", &ShepherdConfig::metrics_listen, /*allow_empty=*/true),
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
  if (!metrics::ValidateMetricsListen(metrics_listen).ok()) {
    return bad("metrics_listen", "expected HOST:PORT (port 0 = any free port) or \"\" (no metrics)");
  }
  return absl::OkStatus();
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

}  // namespace pcp::shepherd

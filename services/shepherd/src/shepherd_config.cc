#include "pcp/shepherd/shepherd_config.h"

#include <yaml-cpp/yaml.h>

#include <functional>
#include <set>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "pcp/base/file.h"
#include "pcp/base/status_macros.h"
#include "pcp/metrics/metrics_server.h"
#include "pcp/rpc/tensor_chunks.h"

namespace pcp::shepherd {
namespace {

// One key of the file: its name and how to store its scalar text (error: what was expected).
struct Key {
  absl::string_view name;
  std::function<absl::Status(const std::string& text, ShepherdConfig& out)> set;
};

absl::Status SetInt(const std::string& text, int64_t* out) {
  if (!absl::SimpleAtoi(text, out)) return absl::InvalidArgumentError(absl::StrCat("expected an integer, got '", text, "'"));
  return absl::OkStatus();
}

const std::vector<Key>& Keys() {
  static const auto* keys = new std::vector<Key>{
      {"listen", [](const std::string& t, ShepherdConfig& c) { c.listen = t; return absl::OkStatus(); }},
      {"state_dir", [](const std::string& t, ShepherdConfig& c) { c.state_dir = t; return absl::OkStatus(); }},
      {"heartbeat_interval_ms", [](const std::string& t, ShepherdConfig& c) { return SetInt(t, &c.heartbeat_interval_ms); }},
      {"heartbeat_timeout_ms", [](const std::string& t, ShepherdConfig& c) { return SetInt(t, &c.heartbeat_timeout_ms); }},
      {"auth_token", [](const std::string& t, ShepherdConfig& c) { c.auth_token = t; return absl::OkStatus(); }},
      {"chunk_bytes", [](const std::string& t, ShepherdConfig& c) { return SetInt(t, &c.chunk_bytes); }},
      {"max_chunk_bytes", [](const std::string& t, ShepherdConfig& c) { return SetInt(t, &c.max_chunk_bytes); }},
      {"round_start_grace_ms", [](const std::string& t, ShepherdConfig& c) { return SetInt(t, &c.round_start_grace_ms); }},
      {"eval_threads", [](const std::string& t, ShepherdConfig& c) { return SetInt(t, &c.eval_threads); }},
      {"log_level", [](const std::string& t, ShepherdConfig& c) { c.log_level = t; return absl::OkStatus(); }},
      {"metrics_listen", [](const std::string& t, ShepherdConfig& c) { c.metrics_listen = t; return absl::OkStatus(); }},
  };
  return *keys;
}

std::string Where(absl::string_view file, const YAML::Mark& mark) {
  return absl::StrCat(file, ":", mark.line < 0 ? 1 : mark.line + 1, ":", mark.column < 0 ? 1 : mark.column + 1);
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
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml_text));
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(Where(file_name, e.mark), ": ", e.msg));
  }
  ShepherdConfig config;
  if (root.IsNull()) return config;
  if (!root.IsMap()) return absl::InvalidArgumentError(absl::StrCat(file_name, ":1:1: expected a mapping of settings"));
  std::set<std::string> seen;
  for (const auto& kv : root) {
    const YAML::Node& key = kv.first;
    const YAML::Node& value = kv.second;
    const std::string name = key.IsScalar() ? key.Scalar() : "";
    const Key* match = nullptr;
    for (const Key& k : Keys()) {
      if (k.name == name) match = &k;
    }
    if (match == nullptr) {
      std::string valid;
      for (const Key& k : Keys()) absl::StrAppend(&valid, valid.empty() ? "" : ", ", k.name);
      return absl::InvalidArgumentError(
          absl::StrCat(Where(file_name, key.Mark()), ": unknown key '", name, "'; valid keys: ", valid));
    }
    if (!seen.insert(name).second) {
      return absl::InvalidArgumentError(absl::StrCat(Where(file_name, key.Mark()), ": ", name, ": duplicate key"));
    }
    if (!value.IsScalar()) {
      return absl::InvalidArgumentError(
          absl::StrCat(Where(file_name, value.IsNull() ? key.Mark() : value.Mark()), ": ", name, ": expected a value"));
    }
    absl::Status s = match->set(value.Scalar(), config);
    if (!s.ok()) return absl::InvalidArgumentError(absl::StrCat(Where(file_name, value.Mark()), ": ", name, ": ", s.message()));
  }
  absl::Status valid = config.Validate();
  if (!valid.ok()) return absl::InvalidArgumentError(absl::StrCat(file_name, ": ", valid.message()));
  return config;
}

absl::StatusOr<ShepherdConfig> LoadShepherdConfig(const std::string& path) {
  PCP_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  return ParseShepherdConfig(text, path);
}

}  // namespace pcp::shepherd

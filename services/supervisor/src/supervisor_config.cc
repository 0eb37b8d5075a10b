#include "pcp/supervisor/supervisor_config.h"

#include <yaml-cpp/yaml.h>

#include <cmath>
#include <functional>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "pcp/base/file.h"
#include "pcp/metrics/metrics_server.h"
#include "pcp/base/status_macros.h"
#include "pcp/supervisor/supervisor_id.h"

namespace pcp::supervisor {
namespace {

// Reads a YAML document against a fixed schema; every error carries file:line:column.
class Reader {
 public:
  explicit Reader(absl::string_view file) : file_(file) {}

  using Handler = std::function<absl::Status(const YAML::Node&, const std::string& key)>;
  struct Key {
    const char* name;
    Handler handle;
  };

  absl::Status Error(const YAML::Mark& mark, absl::string_view message) const {
    if (mark.is_null()) return absl::InvalidArgumentError(absl::StrCat(file_, ": ", message));
    return absl::InvalidArgumentError(
        absl::StrCat(file_, ":", mark.line + 1, ":", mark.column + 1, ": ", message));
  }

  // A mapping whose keys must be among `keys`; `where` names it in errors ("" = top level).
  absl::Status Mapping(const YAML::Node& node, const std::string& where,
                       const std::vector<Key>& keys) const {
    if (node.IsNull()) return absl::OkStatus();
    if (!node.IsMap()) {
      return Error(node.Mark(), where.empty() ? "expected a mapping of settings"
                                              : absl::StrCat(where, ": expected a mapping"));
    }
    std::set<std::string> seen;
    for (const auto& item : node) {
      const std::string name = item.first.Scalar();
      const std::string qualified = where.empty() ? name : absl::StrCat(where, ".", name);
      if (!seen.insert(name).second) {
        return Error(item.first.Mark(), absl::StrCat("duplicate key '", qualified, "'"));
      }
      const Key* key = nullptr;
      for (const Key& k : keys) {
        if (name == k.name) key = &k;
      }
      if (key == nullptr) {
        std::vector<std::string> names;
        for (const Key& k : keys) names.push_back(k.name);
        return Error(item.first.Mark(),
                     absl::StrCat("unknown key '", name, "'",
                                  where.empty() ? "" : absl::StrCat(" in ", where),
                                  " (expected one of: ", absl::StrJoin(names, ", "), ")"));
      }
      PCP_RETURN_IF_ERROR(key->handle(item.second, qualified));
    }
    return absl::OkStatus();
  }

  absl::Status String(const YAML::Node& node, const std::string& key, std::string* out) const {
    if (node.IsNull()) {
      out->clear();
      return absl::OkStatus();
    }
    if (!node.IsScalar()) return Error(node.Mark(), absl::StrCat(key, ": expected a string"));
    *out = node.Scalar();
    return absl::OkStatus();
  }

  absl::Status Strings(const YAML::Node& node, const std::string& key,
                       std::vector<std::string>* out) const {
    out->clear();
    if (node.IsNull()) return absl::OkStatus();
    if (!node.IsSequence()) {
      return Error(node.Mark(), absl::StrCat(key, ": expected a list of strings"));
    }
    for (const auto& item : node) {
      if (!item.IsScalar()) {
        return Error(item.Mark(), absl::StrCat(key, ": expected a list of strings"));
      }
      out->push_back(item.Scalar());
    }
    return absl::OkStatus();
  }

  absl::Status Real(const YAML::Node& node, const std::string& key, double* out) const {
    double value;
    if (!node.IsScalar() || !YAML::convert<double>::decode(node, value) || !std::isfinite(value)) {
      return Error(node.Mark(), absl::StrCat(key, ": expected a number, got '",
                                             node.IsScalar() ? node.Scalar() : "(not a scalar)",
                                             "'"));
    }
    *out = value;
    return absl::OkStatus();
  }

  // A non-negative integer number of milliseconds.
  absl::Status Millis(const YAML::Node& node, const std::string& key, absl::Duration* out) const {
    int64_t value;
    if (!node.IsScalar() || !YAML::convert<int64_t>::decode(node, value) || value < 0) {
      return Error(node.Mark(),
                   absl::StrCat(key, ": expected a whole number of milliseconds >= 0, got '",
                                node.IsScalar() ? node.Scalar() : "(not a scalar)", "'"));
    }
    *out = absl::Milliseconds(value);
    return absl::OkStatus();
  }

  absl::Status Backoff(const YAML::Node& node, const std::string& where,
                       BackoffOptions* out) const {
    return Mapping(
        node, where,
        {{"initial_ms", [=, this](auto& n, auto& k) { return Millis(n, k, &out->initial); }},
         {"multiplier", [=, this](auto& n, auto& k) { return Real(n, k, &out->multiplier); }},
         {"max_ms", [=, this](auto& n, auto& k) { return Millis(n, k, &out->max); }},
         {"jitter", [=, this](auto& n, auto& k) { return Real(n, k, &out->jitter); }}});
  }

 private:
  std::string file_;
};

}  // namespace

absl::StatusOr<SupervisorConfig> ParseSupervisorConfig(absl::string_view yaml_text,
                                                       absl::string_view file_name) {
  Reader r(file_name);
  SupervisorConfig config;
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml_text));
  } catch (const YAML::ParserException& e) {
    return r.Error(e.mark, e.msg);
  }
  WorkerConfig& w = config.worker;
  ReconnectConfig& rc = config.reconnect;
  try {
    PCP_RETURN_IF_ERROR(r.Mapping(
        root, "",
        {{"shepherd", [&](auto& n, auto& k) { return r.String(n, k, &config.shepherd); }},
         {"supervisor_id",
          [&](auto& n, auto& k) -> absl::Status {
            PCP_RETURN_IF_ERROR(r.String(n, k, &config.supervisor_id));
            if (config.supervisor_id.empty()) return absl::OkStatus();
            absl::Status valid = ValidateSupervisorId(config.supervisor_id);
            return valid.ok() ? valid : r.Error(n.Mark(), valid.message());
          }},
         {"state_dir", [&](auto& n, auto& k) { return r.String(n, k, &config.state_dir); }},
         {"auth_token", [&](auto& n, auto& k) { return r.String(n, k, &config.auth_token); }},
         {"grace_ms", [&](auto& n, auto& k) { return r.Millis(n, k, &config.grace); }},
         {"metrics_listen", [&](auto& n, auto& k) { return r.String(n, k, &config.metrics_listen); }},
         {"worker",
          [&](auto& n, auto& k) {
            return r.Mapping(
                n, k,
                {{"binary", [&](auto& n2, auto& k2) { return r.String(n2, k2, &w.binary); }},
                 {"args", [&](auto& n2, auto& k2) { return r.Strings(n2, k2, &w.args); }},
                 {"grace_ms", [&](auto& n2, auto& k2) { return r.Millis(n2, k2, &w.grace); }},
                 {"healthy_after_ms",
                  [&](auto& n2, auto& k2) { return r.Millis(n2, k2, &w.healthy_after); }},
                 {"backoff",
                  [&](auto& n2, auto& k2) { return r.Backoff(n2, k2, &w.backoff); }}});
          }},
         {"reconnect", [&](auto& n, auto& k) {
            return r.Mapping(
                n, k,
                {{"backoff", [&](auto& n2, auto& k2) { return r.Backoff(n2, k2, &rc.backoff); }},
                 {"connect_timeout_ms",
                  [&](auto& n2, auto& k2) { return r.Millis(n2, k2, &rc.connect_timeout); }}});
          }}}));
  } catch (const YAML::Exception& e) {
    return r.Error(e.mark, e.msg);
  }
  return config;
}

absl::StatusOr<SupervisorConfig> LoadSupervisorConfig(absl::string_view path) {
  PCP_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  return ParseSupervisorConfig(text, path);
}

absl::Status ValidateSupervisorConfig(const SupervisorConfig& config) {
  if (config.shepherd.empty()) {
    return absl::InvalidArgumentError("shepherd: no shepherd address (host:port) given");
  }
  if (!config.supervisor_id.empty()) {
    PCP_RETURN_IF_ERROR(ValidateSupervisorId(config.supervisor_id), _ << "supervisor_id");
  }
  if (config.worker.binary.empty()) {
    return absl::InvalidArgumentError("worker.binary: no worker binary given");
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

}  // namespace pcp::supervisor

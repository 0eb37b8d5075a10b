#include "prometheus_server.h"

#include <filesystem>
#include <regex>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "pcp/base/file.h"
#include "pcp/testing/metrics_scrape.h"
#include "yaml-cpp/yaml.h"

namespace pcp::testing {
namespace {

// Percent-encodes everything but RFC 3986's unreserved characters (query parameters).
std::string UrlEncode(absl::string_view text) {
  std::string out;
  for (unsigned char c : text) {
    if (absl::ascii_isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      absl::StrAppend(&out, "%", absl::AsciiStrToUpper(absl::StrCat(absl::Hex(c, absl::kZeroPad2))));
    }
  }
  return out;
}

}  // namespace

absl::StatusOr<std::string> WithGlobalInterval(absl::string_view config_yaml, absl::string_view interval) {
  std::string out(config_yaml);
  for (const char* key : {"scrape_interval", "scrape_timeout", "evaluation_interval"}) {
    // Only the global block's keys are indented by exactly two spaces.
    const std::regex line(absl::StrCat("\n  ", key, ":[ \t]*([0-9a-z]+)"));
    std::smatch match;
    if (!std::regex_search(out, match, line)) {
      return absl::InvalidArgumentError(absl::StrCat("prometheus.yml has no global '", key, "'"));
    }
    out.replace(static_cast<size_t>(match.position(1)), static_cast<size_t>(match.length(1)), std::string(interval));
  }
  return out;
}

absl::StatusOr<std::unique_ptr<PrometheusServer>> PrometheusServer::Start(const PrometheusOptions& options) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(options.dir + "/targets", ec);
  if (ec) return absl::InternalError(absl::StrCat("mkdir ", options.dir, ": ", ec.message()));

  absl::StatusOr<std::string> config = ReadFile(options.deploy_dir + "/prometheus.yml");
  if (!config.ok()) return config.status();
  absl::StatusOr<std::string> rules = ReadFile(options.deploy_dir + "/pcp-alerts.yml");
  if (!rules.ok()) return rules.status();
  absl::StatusOr<std::string> fast = WithGlobalInterval(*config, options.interval);
  if (!fast.ok()) return fast.status();
  if (absl::Status s = WriteFileAtomic(options.dir + "/prometheus.yml", *fast); !s.ok()) return s;
  if (absl::Status s = WriteFileAtomic(options.dir + "/pcp-alerts.yml", *rules); !s.ok()) return s;

  // One file_sd target file per scrape job, at the path the config names.
  try {
    YAML::Node doc = YAML::Load(*config);
    for (const YAML::Node& job : doc["scrape_configs"]) {
      const std::string name = job["job_name"].as<std::string>();
      for (const YAML::Node& sd : job["file_sd_configs"]) {
        for (const YAML::Node& file : sd["files"]) {
          std::vector<std::string> quoted;
          if (auto it = options.targets.find(name); it != options.targets.end()) {
            for (const std::string& t : it->second) quoted.push_back(absl::StrCat("'", t, "'"));
          }
          const std::string text = absl::StrCat("- targets: [", absl::StrJoin(quoted, ", "), "]\n");
          const std::string path = absl::StrCat(options.dir, "/", file.as<std::string>());
          fs::create_directories(fs::path(path).parent_path(), ec);
          if (absl::Status s = WriteFileAtomic(path, text); !s.ok()) return s;
        }
      }
    }
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("prometheus.yml: ", e.what()));
  }

  std::unique_ptr<PrometheusServer> server(new PrometheusServer());
  server->port_ = PickFreePort();
  server->address_ = absl::StrCat("127.0.0.1:", server->port_);
  absl::StatusOr<std::unique_ptr<Process>> process = Process::Start({
      .binary = kPrometheusBinary,
      .args = {absl::StrCat("--config.file=", options.dir, "/prometheus.yml"),
               absl::StrCat("--storage.tsdb.path=", options.dir, "/data"),
               absl::StrCat("--web.listen-address=", server->address_), "--log.level=warn"},
      .log_path = options.dir + "/prometheus.log",
  });
  if (!process.ok()) return process.status();
  server->process_ = *std::move(process);
  // /-/ready answers 200 once the TSDB is open and the config loaded.
  const absl::Time deadline = absl::Now() + absl::Seconds(60);
  while (true) {
    // 200 only once ready (503 before); HttpGet fails on anything but 200.
    if (HttpGet("127.0.0.1", server->port_, "/-/ready", 2000).ok()) break;
    if (!server->process_->Running()) {
      return absl::InternalError(absl::StrCat("prometheus exited:\n", server->process_->LogTail(20)));
    }
    if (absl::Now() > deadline) {
      return absl::DeadlineExceededError(
          absl::StrCat("prometheus not ready in 60 s:\n", server->process_->LogTail(20)));
    }
    absl::SleepFor(absl::Milliseconds(200));
  }
  return server;
}

absl::StatusOr<Json> PrometheusServer::GetData(const std::string& path) {
  // A bad query is HTTP 400, which HttpGet reports as an error with the status line.
  absl::StatusOr<std::string> body = HttpGet("127.0.0.1", port_, path, 20000);
  if (!body.ok()) return body.status();
  absl::StatusOr<Json> doc = Json::Parse(*body);
  if (!doc.ok()) return absl::DataLossError(absl::StrCat("not JSON: ", body->substr(0, 200)));
  const Json* status = doc->Find("status");
  if (status == nullptr || !status->is_string() || status->string_value() != "success") {
    const Json* error = doc->Find("error");
    return absl::InvalidArgumentError(error != nullptr && error->is_string() ? error->string_value() : *body);
  }
  const Json* data = doc->Find("data");
  if (data == nullptr) return absl::DataLossError("no 'data' in the answer");
  return *data;
}

absl::StatusOr<Json> PrometheusServer::Query(absl::string_view expr) {
  absl::StatusOr<Json> data = GetData(absl::StrCat("/api/v1/query?query=", UrlEncode(expr)));
  if (!data.ok()) return data.status();
  const Json* result = data->Find("result");
  if (result == nullptr) return absl::DataLossError("no 'data.result' in the answer");
  return *result;
}

absl::StatusOr<Json> PrometheusServer::QueryRange(absl::string_view expr, absl::Time start, absl::Time end,
                                                  absl::Duration step) {
  absl::StatusOr<Json> data = GetData(absl::StrFormat("/api/v1/query_range?query=%s&start=%.3f&end=%.3f&step=%.3f",
                                                      UrlEncode(expr), absl::ToUnixMillis(start) / 1000.0,
                                                      absl::ToUnixMillis(end) / 1000.0, absl::ToDoubleSeconds(step)));
  if (!data.ok()) return data.status();
  const Json* result = data->Find("result");
  if (result == nullptr) return absl::DataLossError("no 'data.result' in the answer");
  return *result;
}

absl::StatusOr<Json> PrometheusServer::WaitForSeries(absl::string_view expr, absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  absl::Status last = absl::OkStatus();
  while (true) {
    absl::StatusOr<Json> result = Query(expr);
    if (result.ok() && result->is_array() && result->size() > 0) return result;
    if (!result.ok()) last = result.status();
    if (absl::Now() > deadline) {
      return absl::DeadlineExceededError(absl::StrCat("no series for '", expr, "' after ",
                                                      absl::FormatDuration(timeout),
                                                      last.ok() ? "" : absl::StrCat(" (", last.message(), ")")));
    }
    absl::SleepFor(absl::Milliseconds(500));
  }
}

absl::StatusOr<Json> PrometheusServer::ActiveTargets() {
  absl::StatusOr<Json> data = GetData("/api/v1/targets");
  if (!data.ok()) return data.status();
  const Json* active = data->Find("activeTargets");
  if (active == nullptr) return absl::DataLossError("no 'data.activeTargets'");
  return *active;
}

}  // namespace pcp::testing

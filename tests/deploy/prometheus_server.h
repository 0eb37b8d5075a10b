// Test-only: the real Prometheus server (/usr/bin/prometheus) on loopback, running PCP's
// scrape configuration (deploy/prometheus/prometheus.yml) against targets the test names.
//
//   PCP_ASSIGN_OR_RETURN(auto prom, PrometheusServer::Start({
//       .deploy_dir = PCP_SOURCE_DIR "/deploy/prometheus", .dir = tmp + "/prometheus",
//       .targets = {{"pcp-shepherd", {"127.0.0.1:9470"}}}}));
//   PCP_ASSIGN_OR_RETURN(Json result, prom->Query("pcp_shepherd_train_loss"));
//   // result: the "data.result" array of /api/v1/query
//
// Start() copies prometheus.yml and pcp-alerts.yml into `dir` unchanged except for the
// global scrape_interval, scrape_timeout and evaluation_interval (set to `interval`, so a
// test sees samples within seconds), writes dir/targets/<job>.yml (file_sd_configs, as the
// config expects), and starts Prometheus with its TSDB in dir/data on a free port. The
// process is stopped by PID when the object is destroyed.
#ifndef PCP_TESTS_DEPLOY_PROMETHEUS_SERVER_H_
#define PCP_TESTS_DEPLOY_PROMETHEUS_SERVER_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "pcp/base/json.h"
#include "process_harness.h"

namespace pcp::testing {

inline constexpr char kPrometheusBinary[] = "/usr/bin/prometheus";

struct PrometheusOptions {
  std::string deploy_dir;  // holds prometheus.yml and pcp-alerts.yml
  std::string dir;         // created; config copy, targets/, data/, prometheus.log
  // Scrape job name ("pcp-shepherd", ...) -> HOST:PORT targets. Every job of the config
  // gets a target file (empty list when not named here).
  std::map<std::string, std::vector<std::string>> targets;
  std::string interval = "1s";
};

class PrometheusServer {
 public:
  static absl::StatusOr<std::unique_ptr<PrometheusServer>> Start(const PrometheusOptions& options);

  // host:port of the HTTP API.
  const std::string& address() const { return address_; }
  int port() const { return port_; }
  Process* process() { return process_.get(); }

  // GET /api/v1/query?query=expr; the "data.result" value when status is "success",
  // else the error Prometheus gave (INVALID_ARGUMENT for a bad expression).
  absl::StatusOr<Json> Query(absl::string_view expr);
  // GET /api/v1/query_range; "data.result".
  absl::StatusOr<Json> QueryRange(absl::string_view expr, absl::Time start, absl::Time end, absl::Duration step);
  // Polls Query(expr) until it returns at least one series; returns the result.
  absl::StatusOr<Json> WaitForSeries(absl::string_view expr, absl::Duration timeout);
  // GET /api/v1/targets "data.activeTargets".
  absl::StatusOr<Json> ActiveTargets();

 private:
  PrometheusServer() = default;
  absl::StatusOr<Json> GetData(const std::string& path);

  int port_ = 0;
  std::string address_;
  std::unique_ptr<Process> process_;
};

// The config rewrite of Start(), exposed for tests: prometheus.yml text with the global
// intervals set to `interval`. INVALID_ARGUMENT if any of the three keys is missing.
absl::StatusOr<std::string> WithGlobalInterval(absl::string_view config_yaml, absl::string_view interval);

}  // namespace pcp::testing

#endif  // PCP_TESTS_DEPLOY_PROMETHEUS_SERVER_H_

// Test-only: fetch a Prometheus /metrics page over plain HTTP/1.0 and read its samples.
//
//   absl::StatusOr<std::string> text = HttpGet("127.0.0.1", port, "/metrics");
//   Samples samples = ParseSamples(*text);
//   samples[SeriesKey("pcp_shepherd_jobs", {{"state", "running"}})]    // 1
//   std::optional<double> v = SampleValue(*text, "pcp_supervisor_child_up");
//   double delta = SumSamples(*text, "pcp_worker_bytes_sent_total", {{"kind", "delta"}});
//
// Series keys are spelled as prometheus-cpp prints them: name{a="x",b="y"} with labels in
// name order; a series without labels is just its name.
#ifndef PCP_TESTING_METRICS_SCRAPE_H_
#define PCP_TESTING_METRICS_SCRAPE_H_

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace pcp::testing {

// The body of GET http://host:port/path (a socket, no proxy). Errors: UNAVAILABLE when nothing
// answers, INTERNAL for a status other than 200 (with the status line).
absl::StatusOr<std::string> HttpGet(const std::string& host, int port, const std::string& path, int timeout_ms = 5000);

using Samples = std::map<std::string, double>;
// Every sample line of an exposition-format text (comments skipped).
Samples ParseSamples(absl::string_view text);
// "name{a=\"x\",b=\"y\"}" with the labels sorted by name.
std::string SeriesKey(absl::string_view name, std::vector<std::pair<std::string, std::string>> labels = {});
// The value of one series, if present.
std::optional<double> SampleValue(absl::string_view text, absl::string_view name,
                                  std::vector<std::pair<std::string, std::string>> labels = {});
// The sum of every series of `name` that has at least these labels (others any value), e.g.
// SumSamples(text, "pcp_worker_bytes_sent_total", {{"kind", "delta"}}) over every codec; 0
// if none.
double SumSamples(absl::string_view text, absl::string_view name,
                  const std::vector<std::pair<std::string, std::string>>& labels = {});

}  // namespace pcp::testing

#endif  // PCP_TESTING_METRICS_SCRAPE_H_

// Test-only: which metric names a PromQL expression reads, and which a /metrics page
// (Prometheus text exposition format) offers, so tests can check that every name the
// dashboard and the alert rules query is really exported.
//
//   std::set<std::string> used = PcpMetricNames("rate(pcp_worker_errors_total[5m])");
//   ExposedMetrics exposed = ParseExposition(metrics_page_text);
//   for (const std::string& name : used) EXPECT_TRUE(exposed.Covers(name)) << name;
//
// A histogram `h` is exposed as h_bucket, h_sum and h_count; Covers() accepts those three
// names when `h` is a histogram (_sum and _count also for a summary).
#ifndef PCP_TESTS_DEPLOY_METRIC_NAMES_H_
#define PCP_TESTS_DEPLOY_METRIC_NAMES_H_

#include <map>
#include <set>
#include <string>

#include "absl/strings/string_view.h"

namespace pcp::testing {

// Every identifier starting with "pcp_" outside string literals ("...", '...', `...`),
// e.g. {"pcp_worker_errors_total"} for the example above. Label names never start with
// "pcp_" in PCP's catalog, so this is the set of metric names. Works on Grafana template
// queries too (label_values(pcp_shepherd_round, job_id)).
std::set<std::string> PcpMetricNames(absl::string_view promql);

struct ExposedMetrics {
  // Metric family name -> type ("counter", "gauge", "histogram", "summary", "untyped").
  std::map<std::string, std::string> families;
  // Names that appear on sample lines (h_bucket, h_sum, ..., or the family name itself).
  std::set<std::string> samples;

  // True if a query for `name` finds series: `name` has samples and is either a counter,
  // gauge or untyped family of its own, or <histogram>_bucket/_sum/_count (<summary>_sum/
  // _count) of a family declared with that type. A sample line without a TYPE line for it
  // does not count.
  bool Covers(const std::string& name) const;
};

// Parses "# TYPE name type" lines and the names of sample lines; ignores everything else.
ExposedMetrics ParseExposition(absl::string_view text);

}  // namespace pcp::testing

#endif  // PCP_TESTS_DEPLOY_METRIC_NAMES_H_

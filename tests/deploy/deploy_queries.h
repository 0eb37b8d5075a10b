// Test-only: the PromQL expressions PCP's deployment files run: every target of every
// Grafana dashboard panel (and its template-variable queries), and every alerting or
// recording rule.
//
//   PCP_ASSIGN_OR_RETURN(std::vector<NamedQuery> q,
//                        DashboardQueries(ReadFile(".../pcp-cluster.json")));
//   for (const NamedQuery& query : q) Check(query.where, query.expr);
#ifndef PCP_TESTS_DEPLOY_DEPLOY_QUERIES_H_
#define PCP_TESTS_DEPLOY_DEPLOY_QUERIES_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace pcp::testing {

struct NamedQuery {
  std::string where;   // "panel 'Loss' target A", "rule PcpLossNaN", "variable job_id"
  std::string expr;    // as written (Grafana macros such as $__rate_interval included)
  bool promql = true;  // false for Grafana template queries (label_values(...))
};

// Panels (also those nested in collapsed rows) and templating queries of a dashboard.
absl::StatusOr<std::vector<NamedQuery>> DashboardQueries(absl::string_view dashboard_json);

// groups[].rules[].expr of a Prometheus rule file.
absl::StatusOr<std::vector<NamedQuery>> RuleQueries(absl::string_view rules_yaml);

// `expr` with Grafana's variables replaced so Prometheus accepts it: $__rate_interval and
// $__interval -> 1m, $__range -> 1h, any other $name / ${name} -> .* (regex matchers).
std::string ExpandGrafanaVariables(absl::string_view expr);

}  // namespace pcp::testing

#endif  // PCP_TESTS_DEPLOY_DEPLOY_QUERIES_H_

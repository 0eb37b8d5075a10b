// deploy/prometheus and deploy/grafana without a cluster: promtool accepts the scrape
// config and the alert rules and passes the rules' unit tests (pcp-alerts_test.yml); the
// dashboard parses; and every pcp_* name that the dashboard or the rules query is a metric
// of the catalog (libs/metrics), histograms through their _bucket/_sum/_count series.
// prometheus_cluster_test checks the same names against a live cluster's /metrics pages.
#include <unistd.h>

#include <filesystem>
#include <set>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "deploy_queries.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "metric_names.h"
#include "pcp/base/file.h"
#include "pcp/base/json.h"
#include "pcp/metrics/catalog.h"
#include "process_harness.h"
#include "prometheus_server.h"
#include "run_command.h"

namespace pcp::testing {
namespace {

constexpr char kPromtool[] = "/usr/bin/promtool";
constexpr char kDeployDir[] = PCP_SOURCE_DIR "/deploy";

std::string Read(const std::string& path) {
  absl::StatusOr<std::string> text = ReadFile(path);
  EXPECT_TRUE(text.ok()) << text.status();
  return text.ok() ? *text : "";
}

// The catalog as ExposedMetrics would see a page that exports every metric.
ExposedMetrics CatalogAsExposed() {
  ExposedMetrics out;
  for (const metrics::MetricInfo& info : metrics::kMetrics) {
    const std::string name(info.name);
    out.families[name] = std::string(metrics::TypeName(info.type));
    if (info.type == metrics::MetricType::kHistogram) {
      for (const char* suffix : {"_bucket", "_sum", "_count"}) out.samples.insert(name + suffix);
    } else {
      out.samples.insert(name);
    }
  }
  return out;
}

std::vector<NamedQuery> AllQueries() {
  std::vector<NamedQuery> all;
  absl::StatusOr<std::vector<NamedQuery>> dashboard =
      DashboardQueries(Read(absl::StrCat(kDeployDir, "/grafana/dashboards/pcp-cluster.json")));
  EXPECT_TRUE(dashboard.ok()) << dashboard.status();
  absl::StatusOr<std::vector<NamedQuery>> rules =
      RuleQueries(Read(absl::StrCat(kDeployDir, "/prometheus/pcp-alerts.yml")));
  EXPECT_TRUE(rules.ok()) << rules.status();
  if (dashboard.ok()) all = *dashboard;
  if (rules.ok()) all.insert(all.end(), rules->begin(), rules->end());
  return all;
}

class PromtoolTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (access(kPromtool, X_OK) != 0) GTEST_SKIP() << kPromtool << " is not installed (package prometheus)";
    absl::StatusOr<TempDir> dir = TempDir::Create("pcp-deploy-promtool");
    ASSERT_TRUE(dir.ok()) << dir.status();
    dir_ = std::make_unique<TempDir>(*std::move(dir));
  }
  CommandOutput Promtool(const std::vector<std::string>& args) {
    absl::StatusOr<CommandOutput> r = RunCommand(kPromtool, args, dir_->path() + "/promtool.log");
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? *r : CommandOutput{};
  }
  std::unique_ptr<TempDir> dir_;
};

TEST_F(PromtoolTest, CheckConfigPasses) {
  CommandOutput r = Promtool({"check", "config", absl::StrCat(kDeployDir, "/prometheus/prometheus.yml")});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, ::testing::HasSubstr("SUCCESS"));
}

TEST_F(PromtoolTest, CheckRulesPasses) {
  CommandOutput r = Promtool({"check", "rules", absl::StrCat(kDeployDir, "/prometheus/pcp-alerts.yml")});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, ::testing::HasSubstr("SUCCESS"));
}

// Each alert fires on the series it is meant for, after its hold time, and stays silent
// otherwise (deploy/prometheus/pcp-alerts_test.yml).
TEST_F(PromtoolTest, AlertRuleUnitTestsPass) {
  CommandOutput r = Promtool({"test", "rules", absl::StrCat(kDeployDir, "/prometheus/pcp-alerts_test.yml")});
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_THAT(r.output, ::testing::HasSubstr("SUCCESS"));
}

// Every alert in the rule file has at least one unit test.
TEST_F(PromtoolTest, EveryAlertIsUnitTested) {
  const std::string tests = Read(absl::StrCat(kDeployDir, "/prometheus/pcp-alerts_test.yml"));
  absl::StatusOr<std::vector<NamedQuery>> rules =
      RuleQueries(Read(absl::StrCat(kDeployDir, "/prometheus/pcp-alerts.yml")));
  ASSERT_TRUE(rules.ok()) << rules.status();
  for (const NamedQuery& rule : *rules) {
    absl::string_view name = rule.where;
    absl::ConsumePrefix(&name, "rule ");
    EXPECT_TRUE(absl::StrContains(tests, absl::StrCat("alertname: ", name, "\n")))
        << "alert " << name << " has no unit test in pcp-alerts_test.yml";
  }
}

// The copy that PrometheusServer (and run-local-cluster.sh --prometheus) runs, with 1 s
// intervals and generated target files, is still a valid config.
TEST_F(PromtoolTest, FastCopyForTestsIsValid) {
  const std::string config = Read(absl::StrCat(kDeployDir, "/prometheus/prometheus.yml"));
  absl::StatusOr<std::string> fast = WithGlobalInterval(config, "1s");
  ASSERT_TRUE(fast.ok()) << fast.status();
  EXPECT_THAT(*fast, ::testing::HasSubstr("  scrape_interval: 1s\n"));
  EXPECT_THAT(*fast, ::testing::HasSubstr("  evaluation_interval: 1s\n"));
  EXPECT_THAT(*fast, ::testing::HasSubstr("  scrape_timeout: 1s\n"));
  const std::string dir = dir_->path();
  ASSERT_TRUE(WriteFileAtomic(dir + "/prometheus.yml", *fast).ok());
  ASSERT_TRUE(
      WriteFileAtomic(dir + "/pcp-alerts.yml", Read(absl::StrCat(kDeployDir, "/prometheus/pcp-alerts.yml"))).ok());
  CommandOutput r = Promtool({"check", "config", dir + "/prometheus.yml"});
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

TEST(DashboardTest, EveryQueriedMetricIsInTheCatalog) {
  const ExposedMetrics catalog = CatalogAsExposed();
  std::set<std::string> used;
  for (const NamedQuery& q : AllQueries()) {
    const std::set<std::string> names = PcpMetricNames(q.expr);
    // Every query reads some PCP metric, except Prometheus's own `up`.
    if (names.empty()) {
      EXPECT_THAT(q.expr, ::testing::HasSubstr("up{")) << q.where << ": " << q.expr;
    }
    for (const std::string& name : names) {
      EXPECT_TRUE(catalog.Covers(name)) << q.where << " queries " << name
                                        << ", which libs/metrics/catalog.h does not declare";
      used.insert(name);
    }
  }
  // What the issue asks the dashboard to show.
  for (const char* name : {"pcp_shepherd_train_loss", "pcp_shepherd_val_loss", "pcp_shepherd_tokens_per_second",
                           "pcp_shepherd_round_duration_seconds_bucket", "pcp_shepherd_workers",
                           "pcp_shepherd_bytes_sent_total", "pcp_supervisor_restarts_total",
                           // compressed communication (issue 12)
                           "pcp_worker_bytes_sent_total", "pcp_shepherd_payload_f32_bytes_sent_total",
                           "pcp_shepherd_payload_f32_bytes_received_total", "pcp_shepherd_codec_seconds_total",
                           "pcp_worker_codec_seconds_total", "pcp_worker_network_wait_seconds_bucket",
                           "pcp_shepherd_replica_resyncs_total", "pcp_worker_replica_mismatches_total"}) {
    EXPECT_EQ(used.count(name), 1u) << "nothing queries " << name;
  }
  int unused = 0;
  for (const metrics::MetricInfo& info : metrics::kMetrics) {
    const std::string name(info.name);
    if (used.count(name) == 0 && used.count(name + "_bucket") == 0 && used.count(name + "_sum") == 0) {
      std::printf("not on the dashboard or in an alert: %s\n", name.c_str());
      ++unused;
    }
  }
  std::printf("%zu metric names queried; %d of %d catalog metrics unused\n", used.size(), unused, metrics::kNumMetrics);
}

TEST(DashboardTest, IsGrafanaDashboardJson) {
  absl::StatusOr<Json> doc = Json::Parse(Read(absl::StrCat(kDeployDir, "/grafana/dashboards/pcp-cluster.json")));
  ASSERT_TRUE(doc.ok()) << doc.status();
  for (const char* key : {"title", "uid", "panels", "templating", "schemaVersion"}) {
    EXPECT_NE(doc->Find(key), nullptr) << key;
  }
  // Panel ids are unique (Grafana keys panel state by id).
  std::set<int64_t> ids;
  for (const Json& panel : doc->Find("panels")->array_items()) {
    const Json* id = panel.Find("id");
    ASSERT_NE(id, nullptr);
    EXPECT_TRUE(ids.insert(id->int_value()).second) << "duplicate panel id " << id->int_value();
  }
  absl::StatusOr<std::vector<NamedQuery>> queries =
      DashboardQueries(Read(absl::StrCat(kDeployDir, "/grafana/dashboards/pcp-cluster.json")));
  ASSERT_TRUE(queries.ok());
  EXPECT_GE(queries->size(), 20u);
}

TEST(MetricNamesTest, FindsPcpNamesOutsideStrings) {
  EXPECT_THAT(PcpMetricNames(R"(sum by (le) (rate(pcp_a_bucket{job_id=~"pcp_not_a_name"}[5m])) / 1e3 > pcp_b)"),
              ::testing::ElementsAre("pcp_a_bucket", "pcp_b"));
  EXPECT_THAT(PcpMetricNames("label_values(pcp_shepherd_round, job_id)"), ::testing::ElementsAre("pcp_shepherd_round"));
  EXPECT_THAT(PcpMetricNames(R"(up{job="pcp-shepherd"} == 0)"), ::testing::IsEmpty());
}

TEST(MetricNamesTest, HistogramSeriesCoverTheirFamily) {
  const ExposedMetrics exposed = ParseExposition(
      "# HELP pcp_h a histogram\n# TYPE pcp_h histogram\npcp_h_bucket{le=\"1\"} 0\npcp_h_bucket{le=\"+Inf\"} 1\n"
      "pcp_h_sum 2.5\npcp_h_count 1\n# TYPE pcp_c_total counter\npcp_c_total{kind=\"x\"} 3\nstray_sample 1\n");
  EXPECT_TRUE(exposed.Covers("pcp_h_bucket"));
  EXPECT_TRUE(exposed.Covers("pcp_h_sum"));
  EXPECT_TRUE(exposed.Covers("pcp_h_count"));
  EXPECT_FALSE(exposed.Covers("pcp_h"));  // a histogram has no series of that name
  EXPECT_TRUE(exposed.Covers("pcp_c_total"));
  EXPECT_FALSE(exposed.Covers("pcp_c"));
  EXPECT_FALSE(exposed.Covers("stray_sample"));  // no TYPE line
}

TEST(GrafanaVariablesTest, ExpandToValidPromQL) {
  EXPECT_EQ(ExpandGrafanaVariables(R"(rate(x{job_id=~"$job_id"}[$__rate_interval]))"), R"(rate(x{job_id=~".*"}[1m]))");
  EXPECT_EQ(ExpandGrafanaVariables("y{a=~\"${node}\"}[$__range]"), "y{a=~\".*\"}[1h]");
}

}  // namespace
}  // namespace pcp::testing

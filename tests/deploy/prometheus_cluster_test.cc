// The real Prometheus server (/usr/bin/prometheus, loopback, temporary TSDB) runs PCP's own
// scrape config and alert rules (deploy/prometheus, with the intervals shortened to 250 ms)
// against a real local cluster (pcp-shepherd + 2 pcp-supervisors with their pcp-workers,
// tests/services/e2e's ClusterHarness) while it trains a tiny job. Then, through Prometheus's HTTP API:
//   - train loss, tokens/s and the workers' up series come back, and agree with the
//     shepherd's own /metrics page;
//   - every dashboard panel query and alert expression is accepted, and the rules evaluate
//     without errors;
//   - every pcp_* name the dashboard or the alert rules query is on some /metrics page of
//     the running cluster (histograms through _bucket/_sum/_count) and reached Prometheus;
//   - scripts/plot-loss.py draws the job's loss curve into a PNG.
// Skips (with the reason) when /usr/bin/prometheus is not installed.
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "cluster_harness.h"
#include "deploy_queries.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "metric_names.h"
#include "pcp/base/file.h"
#include "pcp/base/json.h"
#include "pcp/testing/metrics_scrape.h"
#include "prometheus_server.h"
#include "run_command.h"

namespace pcp::testing {
namespace {

constexpr char kPython[] = "/usr/bin/python3";
constexpr int kRounds = 8;
// Inner steps per round: enough that a round outlasts a few scrapes (a step of the tiny GPT
// takes milliseconds).
constexpr int kInnerSteps = 100;
// Scrape and rule evaluation interval of the test's Prometheus.
constexpr char kInterval[] = "250ms";

// The value of a one-sample instant-vector result ([{"metric": {...}, "value": [t, "v"]}]).
double SampleOf(const Json& result, size_t i = 0) {
  if (!result.is_array() || result.size() <= i) return NAN;
  const Json* value = result.array_items()[i].Find("value");
  if (value == nullptr || !value->is_array() || value->size() != 2) return NAN;
  double v = NAN;
  return absl::SimpleAtod(value->array_items()[1].string_value(), &v) ? v : NAN;
}

// One cluster, one Prometheus and one finished job for every test in the suite: starting
// them costs most of the suite's time.
class PrometheusClusterTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (access(kPrometheusBinary, X_OK) != 0) return;  // each test skips
    absl::StatusOr<TempDir> dir = TempDir::Create("pcp-deploy-prom");
    ASSERT_TRUE(dir.ok()) << dir.status();
    dir_ = new TempDir(*std::move(dir));
    cluster_ = new ClusterHarness(dir_->path() + "/cluster");
    ASSERT_TRUE(cluster_->StartCluster(2).ok()) << cluster_->Logs();

    // Target files from the cluster's endpoints, one list per scrape job.
    PrometheusOptions options{.deploy_dir = PCP_SOURCE_DIR "/deploy/prometheus",
                              .dir = dir_->path() + "/prometheus",
                              .interval = kInterval};
    for (const MetricsEndpoint& e : cluster_->MetricsEndpoints()) options.targets[e.job].push_back(e.address);
    absl::StatusOr<std::unique_ptr<PrometheusServer>> prom = PrometheusServer::Start(options);
    ASSERT_TRUE(prom.ok()) << prom.status();
    prom_ = prom->release();
    // Every target scraped at least once before the job starts.
    absl::StatusOr<Json> up = prom_->WaitForSeries("count(up == 1) >= 5", absl::Seconds(60));
    ASSERT_TRUE(up.ok()) << up.status() << "\n" << prom_->process()->LogTail();

    job_start_ = absl::Now();
    const std::string job = cluster_->WriteJob({.name = "prom_e2e", .rounds = kRounds, .inner_steps = kInnerSteps});
    absl::StatusOr<CommandResult> submit = cluster_->Pcpctl({"submit", "--quiet", job});
    ASSERT_TRUE(submit.ok()) << submit.status();
    ASSERT_EQ(submit->exit_code, 0) << submit->output;
    job_id_ = std::string(absl::StripAsciiWhitespace(submit->output));
    absl::StatusOr<v1::Job> done = cluster_->WaitForJobEnd(job_id_, absl::Seconds(600));
    ASSERT_TRUE(done.ok()) << done.status() << cluster_->Logs();
    ASSERT_EQ(done->state(), v1::JOB_STATE_COMPLETED) << cluster_->Logs();
    job_end_ = absl::Now();
    std::printf("job %s: %d rounds in %.1f s\n", job_id_.c_str(), kRounds,
                absl::ToDoubleSeconds(job_end_ - job_start_));
    // The final round's values reach Prometheus with the next scrape; wait for them.
    absl::StatusOr<Json> last =
        prom_->WaitForSeries(absl::StrCat("pcp_shepherd_rounds_completed_total{job_id=\"", job_id_, "\"} >= ", kRounds),
                             absl::Seconds(30));
    ASSERT_TRUE(last.ok()) << last.status();
  }

  static void TearDownTestSuite() {
    delete prom_;  // stops Prometheus by PID
    prom_ = nullptr;
    if (cluster_ != nullptr) {
      absl::Status stopped = cluster_->StopAll();
      EXPECT_TRUE(stopped.ok()) << stopped;
    }
    delete cluster_;
    cluster_ = nullptr;
    delete dir_;
    dir_ = nullptr;
  }

  void SetUp() override {
    if (access(kPrometheusBinary, X_OK) != 0) {
      GTEST_SKIP() << kPrometheusBinary << " is not installed (Debian package prometheus)";
    }
    ASSERT_NE(prom_, nullptr) << "suite setup failed";
    ASSERT_FALSE(job_id_.empty()) << "suite setup failed";
  }

  static std::string JobSelector() { return absl::StrCat("{job_id=\"", job_id_, "\"}"); }

  static TempDir* dir_;
  static ClusterHarness* cluster_;
  static PrometheusServer* prom_;
  static std::string job_id_;
  static absl::Time job_start_, job_end_;
};
TempDir* PrometheusClusterTest::dir_ = nullptr;
ClusterHarness* PrometheusClusterTest::cluster_ = nullptr;
PrometheusServer* PrometheusClusterTest::prom_ = nullptr;
std::string PrometheusClusterTest::job_id_;
absl::Time PrometheusClusterTest::job_start_;
absl::Time PrometheusClusterTest::job_end_;

TEST_F(PrometheusClusterTest, EveryTargetIsScrapedUnderItsJobName) {
  absl::StatusOr<Json> targets = prom_->ActiveTargets();
  ASSERT_TRUE(targets.ok()) << targets.status();
  std::map<std::string, int> up_by_job;
  for (const Json& t : targets->array_items()) {
    const Json* labels = t.Find("labels");
    const Json* health = t.Find("health");
    ASSERT_NE(labels, nullptr);
    ASSERT_NE(health, nullptr);
    const Json* last_error = t.Find("lastError");
    EXPECT_EQ(health->string_value(), "up") << t.Serialize() << (last_error ? last_error->Serialize() : "");
    up_by_job[labels->Find("job")->string_value()] += health->string_value() == "up";
  }
  EXPECT_THAT(up_by_job,
              ::testing::ElementsAre(::testing::Pair("pcp-shepherd", 1), ::testing::Pair("pcp-supervisor", 2),
                                     ::testing::Pair("pcp-worker", 2)));
}

TEST_F(PrometheusClusterTest, TrainLossTokensPerSecondAndWorkersUpComeBack) {
  // Train loss: finite and what the shepherd itself exports right now.
  absl::StatusOr<Json> loss = prom_->Query(absl::StrCat("pcp_shepherd_train_loss", JobSelector()));
  ASSERT_TRUE(loss.ok()) << loss.status();
  ASSERT_EQ(loss->size(), 1u) << loss->Serialize();
  const double prom_loss = SampleOf(*loss);
  EXPECT_TRUE(std::isfinite(prom_loss) && prom_loss > 0) << prom_loss;
  absl::StatusOr<std::string> page = cluster_->ScrapeMetrics(cluster_->shepherd_metrics_port());
  ASSERT_TRUE(page.ok()) << page.status();
  std::optional<double> direct = SampleValue(*page, "pcp_shepherd_train_loss", {{"job_id", job_id_}});
  ASSERT_TRUE(direct.has_value()) << *page;
  EXPECT_NEAR(prom_loss, *direct, 1e-6 * std::abs(*direct));

  // The curve over the job: several distinct values, ending below where it started
  // (rounds of kInnerSteps inner steps each on a tiny GPT).
  absl::StatusOr<Json> curve =
      prom_->QueryRange(absl::StrCat("pcp_shepherd_train_loss", JobSelector()), job_start_ - absl::Seconds(5),
                        absl::Now() + absl::Seconds(1), absl::Milliseconds(250));
  ASSERT_TRUE(curve.ok()) << curve.status();
  ASSERT_EQ(curve->size(), 1u);
  std::vector<double> values;
  for (const Json& point : curve->array_items()[0].Find("values")->array_items()) {
    double v = NAN;
    ASSERT_TRUE(absl::SimpleAtod(point.array_items()[1].string_value(), &v));
    if (values.empty() || values.back() != v) values.push_back(v);
  }
  std::printf("train loss as Prometheus saw it (distinct consecutive values): %s\n",
              absl::StrJoin(values, " ").c_str());
  ASSERT_GE(values.size(), 2u);
  EXPECT_LT(values.back(), values.front());

  // Tokens per second of the last round, and the token counter.
  absl::StatusOr<Json> tps = prom_->Query(absl::StrCat("pcp_shepherd_tokens_per_second", JobSelector()));
  ASSERT_TRUE(tps.ok()) << tps.status();
  EXPECT_GT(SampleOf(*tps), 0) << tps->Serialize();
  absl::StatusOr<Json> worker_tps = prom_->Query("pcp_worker_tokens_per_second");
  ASSERT_TRUE(worker_tps.ok()) << worker_tps.status();
  ASSERT_EQ(worker_tps->size(), 2u) << worker_tps->Serialize();
  for (size_t i = 0; i < 2; ++i) EXPECT_GT(SampleOf(*worker_tps, i), 0) << worker_tps->Serialize();
  std::printf("tokens/s: cluster %.0f, workers %.0f and %.0f\n", SampleOf(*tps), SampleOf(*worker_tps, 0),
              SampleOf(*worker_tps, 1));
  absl::StatusOr<Json> rounds = prom_->Query(absl::StrCat("pcp_shepherd_rounds_completed_total", JobSelector()));
  ASSERT_TRUE(rounds.ok());
  EXPECT_EQ(SampleOf(*rounds), kRounds);

  // Workers up: Prometheus's own `up` for both worker targets, the supervisors' child_up,
  // and the shepherd's count of connected workers.
  absl::StatusOr<Json> workers_up = prom_->Query("up{job=\"pcp-worker\"}");
  ASSERT_TRUE(workers_up.ok()) << workers_up.status();
  ASSERT_EQ(workers_up->size(), 2u) << workers_up->Serialize();
  for (size_t i = 0; i < 2; ++i) EXPECT_EQ(SampleOf(*workers_up, i), 1);
  absl::StatusOr<Json> child_up = prom_->Query("sum(pcp_supervisor_child_up)");
  ASSERT_TRUE(child_up.ok());
  EXPECT_EQ(SampleOf(*child_up), 2);
  absl::StatusOr<Json> connected = prom_->Query("sum(pcp_shepherd_workers{state!=\"disconnected\"})");
  ASSERT_TRUE(connected.ok());
  EXPECT_EQ(SampleOf(*connected), 2);
}

// Every name that the dashboard or an alert queries is exported by some process of a
// running cluster, and Prometheus stored series for it through the scrape config.
TEST_F(PrometheusClusterTest, EveryDashboardAndAlertMetricIsExported) {
  ExposedMetrics exposed;
  for (const MetricsEndpoint& e : cluster_->MetricsEndpoints()) {
    absl::StatusOr<std::string> page = cluster_->ScrapeMetrics(e.port);
    ASSERT_TRUE(page.ok()) << e.instance << ": " << page.status();
    ExposedMetrics one = ParseExposition(*page);
    exposed.families.insert(one.families.begin(), one.families.end());
    exposed.samples.insert(one.samples.begin(), one.samples.end());
  }
  absl::StatusOr<std::string> dashboard = ReadFile(PCP_SOURCE_DIR "/deploy/grafana/dashboards/pcp-cluster.json");
  absl::StatusOr<std::string> rules = ReadFile(PCP_SOURCE_DIR "/deploy/prometheus/pcp-alerts.yml");
  ASSERT_TRUE(dashboard.ok() && rules.ok());
  absl::StatusOr<std::vector<NamedQuery>> queries = DashboardQueries(*dashboard);
  absl::StatusOr<std::vector<NamedQuery>> rule_queries = RuleQueries(*rules);
  ASSERT_TRUE(queries.ok()) << queries.status();
  ASSERT_TRUE(rule_queries.ok()) << rule_queries.status();
  queries->insert(queries->end(), rule_queries->begin(), rule_queries->end());

  std::set<std::string> checked;
  for (const NamedQuery& q : *queries) {
    for (const std::string& name : PcpMetricNames(q.expr)) {
      EXPECT_TRUE(exposed.Covers(name)) << q.where << " queries " << name
                                        << ", which no /metrics page of the running cluster exports";
      if (!checked.insert(name).second) continue;
      absl::StatusOr<Json> stored = prom_->Query(absl::StrCat("count({__name__=\"", name, "\"})"));
      ASSERT_TRUE(stored.ok()) << stored.status();
      EXPECT_GE(SampleOf(*stored), 1) << name << " never reached Prometheus (" << q.where << ")";
    }
  }
  std::printf("%zu metric names from %zu dashboard/alert queries found on the cluster's /metrics pages\n",
              checked.size(), queries->size());
  EXPECT_GE(checked.size(), 25u);
}

TEST_F(PrometheusClusterTest, EveryDashboardQueryAndAlertEvaluates) {
  absl::StatusOr<std::string> dashboard = ReadFile(PCP_SOURCE_DIR "/deploy/grafana/dashboards/pcp-cluster.json");
  ASSERT_TRUE(dashboard.ok());
  absl::StatusOr<std::vector<NamedQuery>> queries = DashboardQueries(*dashboard);
  ASSERT_TRUE(queries.ok()) << queries.status();
  int non_empty = 0, promql = 0;
  for (const NamedQuery& q : *queries) {
    if (!q.promql) continue;
    ++promql;
    const std::string expr = ExpandGrafanaVariables(q.expr);
    absl::StatusOr<Json> result = prom_->Query(expr);
    ASSERT_TRUE(result.ok()) << q.where << ": " << expr << ": " << result.status();
    non_empty += result->size() > 0;
  }
  std::printf("%d of %d dashboard queries return series after the job\n", non_empty, promql);
  EXPECT_GE(non_empty, promql * 3 / 4);

  // The alert rules, loaded from the same rule file, evaluate without errors; none of the
  // "something is broken" alerts fires on a healthy cluster.
  absl::StatusOr<std::string> rules_text = HttpGet("127.0.0.1", prom_->port(), "/api/v1/rules");
  ASSERT_TRUE(rules_text.ok()) << rules_text.status();
  absl::StatusOr<Json> rules = Json::Parse(*rules_text);
  ASSERT_TRUE(rules.ok());
  int evaluated = 0;
  for (const Json& group : rules->Find("data")->Find("groups")->array_items()) {
    for (const Json& rule : group.Find("rules")->array_items()) {
      ++evaluated;
      EXPECT_EQ(rule.Find("health")->string_value(), "ok") << rule.Serialize();
      EXPECT_NE(rule.Find("state")->string_value(), "firing") << rule.Serialize();
    }
  }
  EXPECT_GE(evaluated, 9);
}

// scripts/plot-loss.py reads the job's loss from this Prometheus and writes a PNG.
TEST_F(PrometheusClusterTest, PlotLossWritesAPng) {
  if (access(kPython, X_OK) != 0) GTEST_SKIP() << kPython << " is not installed";
  absl::StatusOr<CommandOutput> probe = RunCommand(kPython, {"-c", "import matplotlib"}, dir_->path() + "/probe.log");
  ASSERT_TRUE(probe.ok());
  if (probe->exit_code != 0) GTEST_SKIP() << "python3-matplotlib is not installed";
  const std::string png = dir_->path() + "/loss.png";
  absl::StatusOr<CommandOutput> r =
      RunCommand(kPython,
                 {PCP_SOURCE_DIR "/scripts/plot-loss.py", "--prometheus", prom_->address(), "--job-id", job_id_,
                  absl::StrCat("--start=", absl::ToUnixSeconds(job_start_) - 5), "--out", png},
                 dir_->path() + "/plot.log", absl::Seconds(120));
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->exit_code, 0) << r->output;
  std::printf("%s", r->output.c_str());
  absl::StatusOr<std::string> bytes = ReadFile(png);
  ASSERT_TRUE(bytes.ok()) << bytes.status();
  EXPECT_EQ(bytes->substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
  EXPECT_GT(bytes->size(), 10000u);
  // One point per round seen (the x axis is rounds): several of them.
  std::smatch points;
  const std::regex train_points(job_id_ + R"( train: (\d+) points)");
  ASSERT_TRUE(std::regex_search(r->output, points, train_points)) << r->output;
  EXPECT_GE(std::stoi(points[1].str()), 3) << r->output;
  if (const char* keep = std::getenv("PCP_KEEP_TEST_DIRS"); keep != nullptr) {
    std::printf("PNG kept: %s\n", png.c_str());
  }
}

}  // namespace
}  // namespace pcp::testing

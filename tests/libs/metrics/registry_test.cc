// The metrics wrapper: declared metrics appear in a scrape with their help text and type,
// handles update the series, and the HTTP server serves them (port 0, bad addresses, a port
// in use).
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "pcp/base/file.h"
#include "pcp/metrics/catalog.h"
#include "pcp/metrics/metrics_server.h"
#include "pcp/metrics/registry.h"
#include "pcp/testing/metrics_scrape.h"
#include "pcp/testing/temp_dir.h"

namespace pcp::metrics {
namespace {

using ::pcp::testing::SampleValue;
using ::pcp::testing::SumSamples;

TEST(CatalogTest, EveryMetricHasNameTypeAndHelp) {
  EXPECT_EQ(kMetrics.size(), static_cast<size_t>(kNumMetrics));
  for (const MetricInfo& m : kMetrics) {
    EXPECT_TRUE(absl::StartsWith(m.name, "pcp_")) << m.name;
    EXPECT_FALSE(m.help.empty()) << m.name;
    EXPECT_EQ(m.type == MetricType::kHistogram, m.buckets != Buckets::kNone) << m.name;
    if (m.type == MetricType::kCounter) {
      EXPECT_TRUE(absl::EndsWith(m.name, "_total")) << m.name;
    }
    for (const LabelSpec& l : LabelsOf(m.id)) EXPECT_NE(l.name, "job") << m.name << ": `job` belongs to Prometheus";
  }
  EXPECT_EQ(InfoOf(Metric::kShepherdRoundsCompletedTotal).name, "pcp_shepherd_rounds_completed_total");
  std::vector<LabelSpec> labels = LabelsOf(Metric::kShepherdBytesSentTotal);
  ASSERT_EQ(labels.size(), 2u);
  EXPECT_EQ(labels[0].name, "kind");
  EXPECT_EQ(labels[0].values, (std::vector<std::string>{"theta_full", "theta_update", "program", "shard", "control"}));
  EXPECT_EQ(labels[1].name, "codec");
  EXPECT_EQ(labels[1].values,
            (std::vector<std::string>{"none", "f32", "bf16", "int8", "int4", "topk2", "topk4", "topk8"}));
}

TEST(CatalogTest, MarkdownHasOneRowPerMetric) {
  const std::string md = CatalogMarkdown();
  for (const MetricInfo& m : kMetrics) EXPECT_TRUE(absl::StrContains(md, absl::StrCat("`", m.name, "`"))) << m.name;
  int rows = 0;
  for (char c : md) rows += c == '\n';
  EXPECT_EQ(rows, kNumMetrics + 2);
}

TEST(RegistryTest, DeclaredMetricsAppearWithHelpTypeAndFixedSeries) {
  Registry registry;
  registry.DeclareService(Service::kShepherd, "1.2.3");
  std::string text = registry.Scrape();
  // A family shows once it has a series: at once for metrics without labels or with fixed
  // label values; for free labels (job_id, method/code) once a handle is fetched.
  for (Metric m : MetricsOf(Service::kShepherd)) {
    std::vector<LabelSpec> labels = LabelsOf(m);
    const bool free = m != Metric::kBuildInfo && !labels.empty() && labels[0].values.empty();
    EXPECT_EQ(absl::StrContains(text, absl::StrCat("# TYPE ", InfoOf(m).name, " ")), !free) << InfoOf(m).name;
  }
  registry.Get(kShepherdRound, {"job-0001"}).Set(3);
  registry.Get(kShepherdRoundsCompletedTotal, {"job-0001"});
  registry.Get(kShepherdTrainLoss, {"job-0001"}).Set(2.5);
  registry.Get(kShepherdValLoss, {"job-0001"});
  registry.Get(kShepherdTokensTotal, {"job-0001"});
  registry.Get(kShepherdTokensPerSecond, {"job-0001"});
  registry.Get(kShepherdAdminRequestsTotal, {"GetJob", "NOT_FOUND"}).Increment();
  registry.Get(kShepherdAuthRefusalsTotal, {"Admin", "wrong_role"});
  for (GaugeId g : {kShepherdWorkerStepSeconds, kShepherdWorkerTokensPerSecond, kShepherdWorkerRoundSteps,
                    kShepherdWorkerStaleness}) {
    registry.Get(g, {"node-1"});
  }
  registry.Get(kShepherdWorkerIdleSecondsTotal, {"node-1"});
  text = registry.Scrape();
  for (Metric m : MetricsOf(Service::kShepherd)) {
    const MetricInfo& info = InfoOf(m);
    EXPECT_TRUE(absl::StrContains(text, absl::StrCat("# HELP ", info.name, " ", info.help))) << info.name << "\n"
                                                                                             << text;
    EXPECT_TRUE(absl::StrContains(text, absl::StrCat("# TYPE ", info.name, " ", TypeName(info.type))))
        << info.name << "\n"
        << text;
  }
  // No worker or supervisor metric in a shepherd.
  EXPECT_FALSE(absl::StrContains(text, "pcp_worker_"));
  EXPECT_FALSE(absl::StrContains(text, "pcp_supervisor_"));
  EXPECT_EQ(SampleValue(text, "pcp_build_info", {{"service", "shepherd"}, {"version", "1.2.3"}}), 1.0);
  // Series with fixed label values exist at 0 from the start; label-less histograms too.
  EXPECT_EQ(SampleValue(text, "pcp_shepherd_jobs", {{"state", "cancelled"}}), 0.0);
  EXPECT_EQ(SampleValue(text, "pcp_shepherd_bytes_received_total", {{"kind", "delta"}, {"codec", "int8"}}), 0.0);
  // Several fixed labels: every combination of their values.
  for (const char* kind : {"theta_full", "theta_update", "program", "shard", "control"}) {
    for (const char* codec : {"none", "f32", "bf16", "int8", "int4"}) {
      EXPECT_EQ(SampleValue(text, "pcp_shepherd_bytes_sent_total", {{"kind", kind}, {"codec", codec}}), 0.0)
          << kind << " " << codec;
    }
  }
  EXPECT_EQ(SampleValue(text, "pcp_shepherd_codec_seconds_total", {{"op", "decode"}, {"codec", "int4"}}), 0.0);
  EXPECT_EQ(SampleValue(text, "pcp_shepherd_round_duration_seconds_count"), 0.0);
  EXPECT_EQ(SampleValue(text, "pcp_shepherd_checkpoint_last_success_timestamp_seconds"), 0.0);
  EXPECT_EQ(SampleValue(text, "pcp_shepherd_train_loss", {{"job_id", "job-0001"}}), 2.5);
  EXPECT_EQ(SampleValue(text, "pcp_shepherd_admin_requests_total", {{"method", "GetJob"}, {"code", "NOT_FOUND"}}), 1.0);
}

TEST(RegistryTest, HandlesUpdateTheirSeries) {
  Registry registry;
  registry.DeclareService(Service::kWorker, "0.1.0");
  registry.Get(kWorkerBytesSentTotal, {"delta", "int8"}).Increment(1000);
  registry.Get(kWorkerBytesSentTotal, {"delta", "int8"}).Increment(24);
  registry.Get(kWorkerTokensPerSecond).Set(512.5);
  registry.Get(kWorkerBackendInfo, {"cpu", "x86_64, 2 threads"}).Set(1);
  Histogram step = registry.Get(kWorkerInnerStepDurationSeconds);
  step.Observe(0.003);
  step.Observe(0.2);
  Counter errors = registry.Get(kWorkerErrorsTotal, {"connect"});
  errors.Increment();
  EXPECT_EQ(errors.Value(), 1.0);
  const std::string text = registry.Scrape();
  EXPECT_EQ(SampleValue(text, "pcp_worker_bytes_sent_total", {{"kind", "delta"}, {"codec", "int8"}}), 1024.0) << text;
  EXPECT_EQ(SampleValue(text, "pcp_worker_bytes_sent_total", {{"kind", "delta"}, {"codec", "f32"}}), 0.0);
  EXPECT_EQ(SampleValue(text, "pcp_worker_bytes_sent_total", {{"kind", "control"}, {"codec", "none"}}), 0.0);
  EXPECT_EQ(SampleValue(text, "pcp_worker_tokens_per_second"), 512.5);
  EXPECT_EQ(SampleValue(text, "pcp_worker_backend_info", {{"backend", "cpu"}, {"device", "x86_64, 2 threads"}}), 1.0);
  EXPECT_EQ(SampleValue(text, "pcp_worker_inner_step_duration_seconds_count"), 2.0);
  EXPECT_EQ(SampleValue(text, "pcp_worker_inner_step_duration_seconds_bucket", {{"le", "0.005"}}), 1.0) << text;
  EXPECT_EQ(SampleValue(text, "pcp_worker_inner_step_duration_seconds_bucket", {{"le", "+Inf"}}), 2.0);
  EXPECT_EQ(SampleValue(text, "pcp_worker_errors_total", {{"kind", "connect"}}), 1.0);
}

TEST(MetricsScrapeTest, SumSamplesAddsEverySeriesWithTheLabels) {
  const std::string text =
      "# TYPE pcp_x_total counter\n"
      "pcp_x_total{codec=\"int8\",kind=\"delta\"} 10\n"
      "pcp_x_total{codec=\"f32\",kind=\"delta\"} 5\n"
      "pcp_x_total{codec=\"none\",kind=\"control\"} 2\n"
      "pcp_x_total_more{kind=\"delta\"} 100\n"
      "pcp_x_total{codec=\"int8\",kind=\"xdelta\"} 1000\n";
  EXPECT_EQ(SumSamples(text, "pcp_x_total", {{"kind", "delta"}}), 15.0);
  EXPECT_EQ(SumSamples(text, "pcp_x_total", {{"kind", "delta"}, {"codec", "int8"}}), 10.0);
  EXPECT_EQ(SumSamples(text, "pcp_x_total"), 1017.0);
  EXPECT_EQ(SumSamples(text, "pcp_x_total", {{"kind", "theta"}}), 0.0);
}

TEST(RegistryDeathTest, WrongLabelsAreProgrammerErrors) {
  Registry registry;
  EXPECT_DEATH(registry.Get(kShepherdBytesSentTotal, {"tensor", "none"}), "not a declared value of label kind");
  EXPECT_DEATH(registry.Get(kShepherdBytesSentTotal, {"control", "zip"}), "not a declared value of label codec");
  EXPECT_DEATH(registry.Get(kShepherdTrainLoss), "takes 1 label values, got 0");
}

TEST(MetricsServerTest, ServesTheRegistryOverHttpOnAnyFreePort) {
  Registry registry;
  registry.DeclareService(Service::kSupervisor, "0.1.0");
  registry.Get(kSupervisorRestartsTotal).Increment(3);
  absl::StatusOr<std::unique_ptr<MetricsServer>> server = MetricsServer::Start("127.0.0.1:0", registry);
  ASSERT_TRUE(server.ok()) << server.status();
  ASSERT_GT((*server)->port(), 0);
  EXPECT_EQ((*server)->url(), absl::StrCat("http://127.0.0.1:", (*server)->port(), "/metrics"));
  absl::StatusOr<std::string> body = pcp::testing::HttpGet("127.0.0.1", (*server)->port(), "/metrics");
  ASSERT_TRUE(body.ok()) << body.status();
  EXPECT_TRUE(absl::StrContains(*body, "# TYPE pcp_supervisor_restarts_total counter")) << *body;
  EXPECT_EQ(SampleValue(*body, "pcp_supervisor_restarts_total"), 3.0);
  registry.Get(kSupervisorRestartsTotal).Increment();
  body = pcp::testing::HttpGet("127.0.0.1", (*server)->port(), "/metrics");
  ASSERT_TRUE(body.ok()) << body.status();
  EXPECT_EQ(SampleValue(*body, "pcp_supervisor_restarts_total"), 4.0);

  // The same port again: in use, a clear error and no crash.
  absl::StatusOr<std::unique_ptr<MetricsServer>> second =
      MetricsServer::Start(absl::StrCat("127.0.0.1:", (*server)->port()), registry);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), absl::StatusCode::kUnavailable) << second.status();
  EXPECT_TRUE(absl::StrContains(second.status().message(), "cannot serve metrics on 127.0.0.1:")) << second.status();
}

class MetricsAddressFileTest : public pcp::testing::TempDirTest {};

// Port 0 plus an address file: the bound port is written down (scripts read it instead of
// picking a port in advance), and a restart binds the same port again while it is free.
TEST_F(MetricsAddressFileTest, HoldsTheBoundPortAndARestartReusesIt) {
  const std::string file = dir_ + "/worker.metrics";
  absl::StatusOr<std::unique_ptr<MetricsServer>> first = ServeServiceMetrics(Service::kWorker, "127.0.0.1:0", file);
  ASSERT_TRUE(first.ok()) << first.status();
  const int port = (*first)->port();
  EXPECT_EQ(ReadFile(file).value_or(""), absl::StrCat("127.0.0.1:", port, "\n"));
  first->reset();  // the worker exits

  absl::StatusOr<std::unique_ptr<MetricsServer>> again = ServeServiceMetrics(Service::kWorker, "127.0.0.1:0", file);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ((*again)->port(), port);

  // While that port is taken, a restart gets another one and says so in the file.
  absl::StatusOr<std::unique_ptr<MetricsServer>> other = ServeServiceMetrics(Service::kWorker, "127.0.0.1:0", file);
  ASSERT_TRUE(other.ok()) << other.status();
  EXPECT_NE((*other)->port(), port);
  EXPECT_EQ(ReadFile(file).value_or(""), absl::StrCat("127.0.0.1:", (*other)->port(), "\n"));

  // A file that cannot be written is an error naming the flag.
  absl::StatusOr<std::unique_ptr<MetricsServer>> unwritable =
      ServeServiceMetrics(Service::kWorker, "127.0.0.1:0", dir_ + "/missing/dir/file");
  ASSERT_FALSE(unwritable.ok());
  EXPECT_TRUE(absl::StrContains(unwritable.status().message(), "--metrics_address_file")) << unwritable.status();
}

TEST(MetricsServerTest, BadAddressesAreErrors) {
  Registry registry;
  for (const char* bad : {"9470", "127.0.0.1:", "127.0.0.1:http", "127.0.0.1:70000", ":9470"}) {
    absl::StatusOr<std::unique_ptr<MetricsServer>> s = MetricsServer::Start(bad, registry);
    ASSERT_FALSE(s.ok()) << bad;
    EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument) << bad << ": " << s.status();
    EXPECT_FALSE(ValidateMetricsListen(bad).ok()) << bad;
  }
  EXPECT_TRUE(ValidateMetricsListen("").ok());
  EXPECT_TRUE(ValidateMetricsListen("0.0.0.0:9470").ok());
  // An address that is not this machine's cannot be bound.
  absl::StatusOr<std::unique_ptr<MetricsServer>> foreign = MetricsServer::Start("192.0.2.1:0", registry);
  ASSERT_FALSE(foreign.ok());
  EXPECT_EQ(foreign.status().code(), absl::StatusCode::kUnavailable) << foreign.status();
}

}  // namespace
}  // namespace pcp::metrics

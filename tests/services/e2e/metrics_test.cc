// Prometheus /metrics of a real cluster (pcp-shepherd + 2 supervisors, each with its worker,
// on loopback): every service serves its catalog, and the key series move while a tiny job
// trains; a SIGKILLed worker shows in its supervisor's restart and exit series.
#include <signal.h>

#include <cstdio>
#include <functional>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "cluster_harness.h"
#include "gtest/gtest.h"
#include "pcp/metrics/catalog.h"
#include "pcp/testing/metrics_scrape.h"

namespace pcp::testing {
namespace {

using metrics::InfoOf;
using metrics::Metric;

double Value(const std::string& text, absl::string_view name,
             std::vector<std::pair<std::string, std::string>> labels = {}) {
  return SampleValue(text, name, std::move(labels)).value_or(-1);
}

// θ bytes on a page: in full and as updates, every codec.
double Theta(const std::string& text, absl::string_view name) {
  return SumSamples(text, name, {{"kind", "theta_full"}}) + SumSamples(text, name, {{"kind", "theta_update"}});
}

// Scrapes until `done(text)` holds or `timeout` passes; returns the last text.
std::string ScrapeUntil(const ClusterHarness& cluster, int port, const std::function<bool(const std::string&)>& done,
                        absl::Duration timeout) {
  absl::Time deadline = absl::Now() + timeout;
  std::string text;
  while (true) {
    absl::StatusOr<std::string> got = cluster.ScrapeMetrics(port);
    if (got.ok()) {
      text = *got;
      if (done(text)) return text;
    }
    if (absl::Now() > deadline) return text;
    absl::SleepFor(absl::Milliseconds(200));
  }
}

// Every metric of `service` is declared (HELP and TYPE lines) in `text` (families with free
// labels, e.g. job_id, show once they have a series).
void ExpectCatalog(const std::string& text, metrics::Service service) {
  for (Metric m : metrics::MetricsOf(service)) {
    const metrics::MetricInfo& info = InfoOf(m);
    EXPECT_TRUE(absl::StrContains(text, absl::StrCat("# TYPE ", info.name, " ", metrics::TypeName(info.type))))
        << metrics::ServiceName(service) << " lacks " << info.name;
  }
}

TEST(MetricsTest, EveryServiceExportsItsCatalogAndTheSeriesMove) {
  absl::StatusOr<TempDir> dir = TempDir::Create("pcp-metrics");
  ASSERT_TRUE(dir.ok()) << dir.status();
  ClusterHarness cluster(dir->path());
  ASSERT_TRUE(cluster.StartCluster(2).ok()) << cluster.Logs();

  const std::vector<MetricsEndpoint> endpoints = cluster.MetricsEndpoints();
  ASSERT_EQ(endpoints.size(), 5u);
  EXPECT_EQ(endpoints[0].job, "pcp-shepherd");
  EXPECT_EQ(endpoints[1].job, "pcp-supervisor");
  EXPECT_EQ(endpoints[2].job, "pcp-worker");
  for (const MetricsEndpoint& e : endpoints) {
    absl::Status up = WaitForPort(e.port, absl::Seconds(30));
    ASSERT_TRUE(up.ok()) << e.job << " " << e.address << ": " << up << "\n" << cluster.Logs();
  }

  // Before the job: catalogs, build info, fixed series at 0, two workers connected.
  const int shepherd = cluster.shepherd_metrics_port();
  std::string before = ScrapeUntil(
      cluster, shepherd,
      [](const std::string& t) {
        return Value(t, "pcp_shepherd_workers", {{"state", "disconnected"}}) == 0 &&
               Value(t, "pcp_shepherd_workers", {{"state", "idle"}}) == 2;
      },
      absl::Seconds(10));
  EXPECT_EQ(Value(before, "pcp_build_info", {{"service", "shepherd"}, {"version", "0.1.0"}}), 1.0) << before;
  EXPECT_EQ(Value(before, "pcp_shepherd_workers", {{"state", "idle"}}), 2.0) << before;
  EXPECT_EQ(Value(before, "pcp_shepherd_jobs", {{"state", "completed"}}), 0.0);
  const double params_before = Theta(before, "pcp_shepherd_bytes_sent_total");
  EXPECT_EQ(params_before, 0.0);
  EXPECT_EQ(Value(before, "pcp_shepherd_bytes_sent_total", {{"kind", "theta_full"}, {"codec", "f32"}}), 0.0) << before;
  EXPECT_GT(Value(before, "pcp_shepherd_bytes_received_total", {{"kind", "control"}, {"codec", "none"}}),
            0.0);  // Joins, heartbeats

  for (int i = 0; i < 2; ++i) {
    absl::StatusOr<std::string> s = cluster.ScrapeMetrics(cluster.supervisor_metrics_port(i));
    ASSERT_TRUE(s.ok()) << s.status();
    ExpectCatalog(*s, metrics::Service::kSupervisor);
    EXPECT_EQ(Value(*s, "pcp_supervisor_child_up"), 1.0) << *s;
    EXPECT_EQ(Value(*s, "pcp_supervisor_restarts_total"), 0.0);
    absl::StatusOr<std::string> w = cluster.ScrapeMetrics(cluster.worker_metrics_port(i));
    ASSERT_TRUE(w.ok()) << w.status();
    ExpectCatalog(*w, metrics::Service::kWorker);
    EXPECT_TRUE(absl::StrContains(*w, "pcp_worker_backend_info{backend=\"cpu\",device=")) << *w;
    EXPECT_EQ(Value(*w, "pcp_build_info", {{"service", "worker"}, {"version", "0.1.0"}}), 1.0);
  }
  std::string sup = ScrapeUntil(
      cluster, cluster.supervisor_metrics_port(0),
      [](const std::string& t) { return Value(t, "pcp_supervisor_connected") == 1; }, absl::Seconds(10));
  EXPECT_EQ(Value(sup, "pcp_supervisor_connected"), 1.0) << sup;

  // A tiny job: 3 rounds.
  const std::string job_file = cluster.WriteJob({.name = "metrics_e2e", .rounds = 3, .inner_steps = 4});
  absl::StatusOr<CommandResult> submit = cluster.Pcpctl({"submit", "--quiet", job_file});
  ASSERT_TRUE(submit.ok()) << submit.status();
  ASSERT_EQ(submit->exit_code, 0) << submit->output;
  const std::string job_id(absl::StripAsciiWhitespace(submit->output));
  absl::StatusOr<v1::Job> job = cluster.WaitForJobEnd(job_id, absl::Seconds(300));
  ASSERT_TRUE(job.ok()) << job.status();
  ASSERT_EQ(job->state(), v1::JOB_STATE_COMPLETED) << job->reason();

  const std::string after = ScrapeUntil(
      cluster, shepherd,
      [](const std::string& t) {
        return Value(t, "pcp_shepherd_jobs", {{"state", "completed"}}) == 1;
      },
      absl::Seconds(10));
  std::printf("shepherd /metrics after the job (%zu bytes):\n%s\n", after.size(), after.c_str());
  ExpectCatalog(after, metrics::Service::kShepherd);  // per-job families included now
  EXPECT_EQ(Value(after, "pcp_shepherd_jobs", {{"state", "completed"}}), 1.0);
  EXPECT_EQ(Value(after, "pcp_shepherd_jobs", {{"state", "running"}}), 0.0);
  EXPECT_EQ(Value(after, "pcp_shepherd_rounds_completed_total", {{"job_id", job_id}}), 3.0) << after;
  EXPECT_EQ(Value(after, "pcp_shepherd_round", {{"job_id", job_id}}), 3.0);
  const double loss = Value(after, "pcp_shepherd_train_loss", {{"job_id", job_id}});
  EXPECT_GT(loss, 0.0);
  EXPECT_LT(loss, 10.0);
  EXPECT_GT(Value(after, "pcp_shepherd_val_loss", {{"job_id", job_id}}), 0.0);
  // 3 rounds x 2 workers x 4 steps x batch 8 x block 32 (a worker may miss a round: >= 1 result).
  const double tokens = Value(after, "pcp_shepherd_tokens_total", {{"job_id", job_id}});
  EXPECT_GE(tokens, 3 * 4 * 8 * 32);
  EXPECT_LE(tokens, 3 * 2 * 4 * 8 * 32);
  EXPECT_GT(Value(after, "pcp_shepherd_tokens_per_second", {{"job_id", job_id}}), 0.0);
  EXPECT_EQ(Value(after, "pcp_shepherd_round_duration_seconds_count"), 3.0);
  EXPECT_EQ(Value(after, "pcp_shepherd_outer_step_duration_seconds_count"), 3.0);
  EXPECT_GE(Value(after, "pcp_shepherd_checkpoint_duration_seconds_count"), 1.0);
  EXPECT_GT(Value(after, "pcp_shepherd_checkpoint_last_success_timestamp_seconds"),
            absl::ToUnixSeconds(absl::Now()) - 600);
  EXPECT_GT(Theta(after, "pcp_shepherd_bytes_sent_total"), params_before);
  // The job streams f32 (no diloco.compression): θ in full every round, Δ as f32.
  EXPECT_GT(Value(after, "pcp_shepherd_bytes_sent_total", {{"kind", "theta_full"}, {"codec", "f32"}}), 0.0);
  EXPECT_EQ(SumSamples(after, "pcp_shepherd_bytes_sent_total", {{"kind", "theta_update"}}), 0.0);
  EXPECT_GT(Value(after, "pcp_shepherd_bytes_sent_total", {{"kind", "program"}, {"codec", "none"}}), 0.0);
  EXPECT_GT(Value(after, "pcp_shepherd_bytes_received_total", {{"kind", "delta"}, {"codec", "f32"}}), 0.0);
  EXPECT_EQ(SumSamples(after, "pcp_shepherd_codec_seconds_total"), 0.0);  // f32 is never encoded
  EXPECT_GE(Value(after, "pcp_shepherd_admin_requests_total", {{"code", "OK"}, {"method", "SubmitJob"}}), 1.0);
  EXPECT_GE(Value(after, "pcp_shepherd_admin_requests_total", {{"code", "OK"}, {"method", "GetJob"}}), 1.0);

  // The workers saw the same bytes from their side, ran inner steps and report a rate.
  double worker_params = 0, worker_deltas = 0, waits = 0;
  for (int i = 0; i < 2; ++i) {
    absl::StatusOr<std::string> w = cluster.ScrapeMetrics(cluster.worker_metrics_port(i));
    ASSERT_TRUE(w.ok()) << w.status();
    worker_params += Theta(*w, "pcp_worker_bytes_received_total");
    worker_deltas += SumSamples(*w, "pcp_worker_bytes_sent_total", {{"kind", "delta"}});
    // 3 rounds: a wait before rounds 2 and 3 (fewer if the worker missed one).
    waits += Value(*w, "pcp_worker_network_wait_seconds_count");
    EXPECT_LE(Value(*w, "pcp_worker_network_wait_seconds_count"), 2.0) << *w;
    EXPECT_GE(Value(*w, "pcp_worker_inner_step_duration_seconds_count"), 4.0) << *w;
    EXPECT_GT(Value(*w, "pcp_worker_tokens_per_second"), 0.0);
    EXPECT_GE(Value(*w, "pcp_worker_program_compile_seconds"), 0.0);
    EXPECT_EQ(Value(*w, "pcp_worker_errors_total", {{"kind", "compile"}}), 0.0);
  }
  EXPECT_GE(waits, 1.0);  // 3 or more results from 2 workers: one of them ran two rounds
  // θ leaves the shepherd zero-copy (pcp/rpc/chunk_wire.h): each chunk's small header is on
  // the wire twice, a few bytes per megabyte chunk more than the worker's parsed messages.
  const double shepherd_params = Theta(after, "pcp_shepherd_bytes_sent_total");
  EXPECT_GE(shepherd_params, worker_params);
  EXPECT_LE(shepherd_params, worker_params * 1.001);
  EXPECT_EQ(worker_deltas, SumSamples(after, "pcp_shepherd_bytes_received_total", {{"kind", "delta"}}));

  // A crash: supervisor 1's worker is SIGKILLed; its supervisor records the exit and restarts it.
  const pid_t worker = cluster.WorkerPid(0);
  ASSERT_GT(worker, 0);
  ASSERT_EQ(kill(worker, SIGKILL), 0);
  sup = ScrapeUntil(
      cluster, cluster.supervisor_metrics_port(0),
      [](const std::string& t) {
        return Value(t, "pcp_supervisor_restarts_total") == 1 && Value(t, "pcp_supervisor_child_up") == 1;
      },
      absl::Seconds(30));
  EXPECT_EQ(Value(sup, "pcp_supervisor_restarts_total"), 1.0) << sup;
  EXPECT_EQ(Value(sup, "pcp_supervisor_child_up"), 1.0);
  EXPECT_EQ(Value(sup, "pcp_supervisor_last_exit_code"), -1.0);
  EXPECT_EQ(Value(sup, "pcp_supervisor_last_exit_signal"), 9.0);
  EXPECT_EQ(Value(sup, "pcp_supervisor_backoff_seconds"), 0.0);  // running again
  // The restarted worker serves its metrics on the same port again, from a fresh process.
  std::string fresh = ScrapeUntil(
      cluster, cluster.worker_metrics_port(0),
      [](const std::string& t) { return Theta(t, "pcp_worker_bytes_received_total") == 0; }, absl::Seconds(30));
  EXPECT_EQ(Value(fresh, "pcp_worker_bytes_received_total", {{"kind", "theta_full"}, {"codec", "f32"}}), 0.0) << fresh;

  cluster.RecordWorkerPids();
  ASSERT_TRUE(cluster.StopAll().ok()) << cluster.Logs();
}

}  // namespace
}  // namespace pcp::testing

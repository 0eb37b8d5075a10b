// Δ screening on a real cluster (processes on loopback): a worker started with the test-only
// --fault_delta option sends corrupted Δs; the shepherd refuses them (log, metric, WatchJob
// events, GetJob), quarantines the worker after diloco.screening.quarantine_after refusals,
// and the job completes on the honest workers with a finite loss. A job whose every Δ is
// refused rolls its rounds back and fails after max_rollbacks in a row. Refusal counts and
// quarantines survive a SIGKILLed shepherd.
#include <signal.h>

#include <cmath>
#include <regex>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "cluster_harness.h"
#include "gtest/gtest.h"
#include "pcp/testing/metrics_scrape.h"

namespace pcp::testing {
namespace {

// Every event of a WatchJob stream, read on a thread until the stream ends (the job's result).
class EventRecorder {
 public:
  EventRecorder(ClusterHarness& cluster, const std::string& job_id) {
    thread_ = std::thread([this, &cluster, job_id] {
      context_.set_deadline(std::chrono::system_clock::now() + std::chrono::minutes(10));
      v1::WatchJobRequest request;
      request.set_job_id(job_id);
      auto reader = cluster.admin().WatchJob(&context_, request);
      v1::JobEvent event;
      while (reader->Read(&event)) events_.push_back(event);
      (void)reader->Finish();
    });
  }
  // Waits for the stream's end.
  std::vector<v1::JobEvent> Join() {
    thread_.join();
    return events_;
  }

 private:
  grpc::ClientContext context_;
  std::vector<v1::JobEvent> events_;
  std::thread thread_;
};

std::string SubmitJob(ClusterHarness& cluster, const E2eJob& spec) {
  absl::StatusOr<std::string> id = cluster.SubmitJob(spec);
  EXPECT_TRUE(id.ok()) << id.status();
  return id.ok() ? *id : "";
}

TEST(ScreeningTest, PoisoningWorkerIsRefusedAndQuarantinedAndTheJobCompletes) {
  absl::StatusOr<TempDir> dir = TempDir::Create();
  ASSERT_TRUE(dir.ok());
  ClusterHarness cluster(dir->path());
  // node-3: Δ × 1000, then a NaN, then noise 20 × its norm.
  ASSERT_TRUE(cluster.StartCluster(3, "--fault_delta=scale:1000/nan/noise:20").ok()) << cluster.Logs();

  const std::string job_id = SubmitJob(cluster, {.name = "screening_e2e", .rounds = 6, .workers = 3});
  ASSERT_FALSE(job_id.empty());
  EventRecorder recorder(cluster, job_id);
  absl::StatusOr<v1::Job> job = cluster.WaitForJobEnd(job_id, absl::Minutes(8));
  ASSERT_TRUE(job.ok()) << job.status() << cluster.Logs();
  std::vector<v1::JobEvent> events = recorder.Join();
  ASSERT_EQ(job->state(), v1::JOB_STATE_COMPLETED) << job->reason() << cluster.Logs(60);
  EXPECT_EQ(job->progress().round(), 6u);
  ASSERT_TRUE(job->progress().has_val_loss());
  EXPECT_TRUE(std::isfinite(job->progress().val_loss()));
  EXPECT_LT(job->progress().val_loss(), 4.2);  // ln 65 = 4.17: it learned, not blew up

  // GetJob: three refusals, all node-3's, and it is quarantined.
  const v1::JobProgress& p = job->progress();
  EXPECT_EQ(p.deltas_refused(), 3u);
  EXPECT_EQ(p.rounds_rolled_back(), 0u);
  ASSERT_EQ(p.screened_workers_size(), 1);
  EXPECT_EQ(p.screened_workers(0).supervisor_id(), "node-3");
  EXPECT_EQ(p.screened_workers(0).refusals(), 3u);
  EXPECT_TRUE(p.screened_workers(0).quarantined());
  EXPECT_EQ(p.screened_workers(0).last_reason(), "norm");

  // WatchJob: a rejection per bad Δ, with its reason, then the quarantine.
  std::vector<std::string> seen;
  for (const v1::JobEvent& e : events) {
    if (!e.has_screening()) continue;
    const v1::ScreeningEvent& s = e.screening();
    EXPECT_EQ(s.supervisor_id(), "node-3");
    seen.push_back(absl::StrCat(v1::ScreeningEvent::Kind_Name(s.kind()), " ", s.reason(), " ", s.refusals()));
    if (s.kind() == v1::ScreeningEvent::DELTA_REJECTED && s.reason() == "norm") {
      EXPECT_GT(s.norm(), s.threshold());
      EXPECT_LT(s.threshold(), 1e4);  // the median bound, not the cap
    }
  }
  // (Its rounds are those it was in: normally 1, 2, 3; not asserted, as a slow start may
  // leave it out of round 1.)
  EXPECT_EQ(seen, (std::vector<std::string>{"DELTA_REJECTED norm 1", "DELTA_REJECTED non_finite 2",
                                            "DELTA_REJECTED norm 3", "WORKER_QUARANTINED  3"}));

  // The metric, by reason.
  absl::StatusOr<std::string> page = cluster.ScrapeMetrics(cluster.shepherd_metrics_port());
  ASSERT_TRUE(page.ok()) << page.status();
  auto refused = [&](const std::string& reason) {
    return SampleValue(*page, "pcp_shepherd_deltas_refused_total", {{"reason", reason}}).value_or(-1);
  };
  EXPECT_EQ(refused("norm"), 2) << *page;
  EXPECT_EQ(refused("non_finite"), 1) << *page;
  EXPECT_EQ(refused("max_norm"), 0) << *page;

  // The log names the worker; rounds after the quarantine ran without it, its slot's data
  // trained by the others (diloco.orphan_slots: takeover): two Δs used in rounds 1-3 (node-3's
  // refused), three from round 4 on.
  const std::string log = cluster.shepherd()->Log();
  EXPECT_TRUE(absl::StrContains(log, "worker node-3 is quarantined after 3 refused")) << log;
  EXPECT_TRUE(std::regex_search(log, std::regex("worker node-[12] takes over slot"))) << log;
  std::vector<RoundLine> rounds = RoundsFromLog(log, job_id);
  ASSERT_EQ(rounds.size(), 6u) << log;
  for (const RoundLine& r : rounds) EXPECT_EQ(r.workers, r.round <= 3 ? 2 : 3) << "round " << r.round;

  // pcpctl status shows it.
  absl::StatusOr<CommandResult> status = cluster.Pcpctl({"status", job_id});
  ASSERT_TRUE(status.ok()) << status.status();
  EXPECT_TRUE(absl::StrContains(status->output, "node-3: 3 Δs refused (last: norm, round ")) << status->output;
  EXPECT_TRUE(absl::StrContains(status->output, "), QUARANTINED")) << status->output;
  ASSERT_TRUE(cluster.StopAll().ok()) << cluster.Logs();
}

// Streaming aggregation (diloco.aggregation: streaming): each Δ is judged on the norm its
// header declares and summed chunk by chunk as it arrives. node-3 sends an honest Δ, then
// Δ × 1000 (refused on its declared norm against past rounds' median), then Δ × 1.1 declaring
// the norm of Δ (caught mid-stream once its running norm passes the declaration: some of its
// chunks were summed already, so the round is redone), then noise (refused): quarantined.
TEST(ScreeningTest, StreamingAggregationJudgesDeclaredNormsAndRedoesARoundALiarTouched) {
  absl::StatusOr<TempDir> dir = TempDir::Create();
  ASSERT_TRUE(dir.ok());
  ClusterHarness cluster(dir->path());
  ASSERT_TRUE(cluster.StartCluster(3, "--fault_delta=none/scale:1000/lie:1.1/noise:20").ok()) << cluster.Logs();
  const std::string job_id = SubmitJob(cluster, {.name = "streamed_screening_e2e",
                                                 .rounds = 8,
                                                 .workers = 3,
                                                 .diloco_yaml = "  aggregation: streaming\n"});
  ASSERT_FALSE(job_id.empty());
  absl::StatusOr<v1::Job> job = cluster.WaitForJobEnd(job_id, absl::Minutes(8));
  ASSERT_TRUE(job.ok()) << job.status() << cluster.Logs();
  ASSERT_EQ(job->state(), v1::JOB_STATE_COMPLETED) << job->reason() << cluster.Logs(60);
  EXPECT_EQ(job->progress().round(), 8u);
  ASSERT_TRUE(job->progress().has_val_loss());
  EXPECT_TRUE(std::isfinite(job->progress().val_loss()));
  EXPECT_LT(job->progress().val_loss(), 4.2);  // it learned

  const std::string log = cluster.shepherd()->Log();
  EXPECT_TRUE(absl::StrContains(log, "Δ aggregation streaming")) << log;
  const v1::JobProgress& p = job->progress();
  EXPECT_EQ(p.deltas_refused(), 3u) << log;
  EXPECT_EQ(p.rounds_rolled_back(), 1u) << log;
  ASSERT_EQ(p.screened_workers_size(), 1);
  EXPECT_EQ(p.screened_workers(0).supervisor_id(), "node-3");
  EXPECT_TRUE(p.screened_workers(0).quarantined());
  EXPECT_TRUE(absl::StrContains(log, "a streamed Δ broke its header after some of its chunks were summed")) << log;
  absl::StatusOr<std::string> page = cluster.ScrapeMetrics(cluster.shepherd_metrics_port());
  ASSERT_TRUE(page.ok()) << page.status();
  auto refused = [&](const std::string& reason) {
    return SampleValue(*page, "pcp_shepherd_deltas_refused_total", {{"reason", reason}}).value_or(-1);
  };
  EXPECT_EQ(refused("norm"), 2) << *page;
  EXPECT_EQ(refused("declared_norm"), 1) << *page;
  ASSERT_TRUE(cluster.StopAll().ok()) << cluster.Logs();
}

TEST(ScreeningTest, RoundsWithEveryDeltaRefusedRollBackAndFailTheJob) {
  absl::StatusOr<TempDir> dir = TempDir::Create();
  ASSERT_TRUE(dir.ok());
  ClusterHarness cluster(dir->path());
  ASSERT_TRUE(cluster.StartCluster(1, "--fault_delta=nan").ok()) << cluster.Logs();
  const std::string job_id =
      SubmitJob(cluster, {.name = "rollback_e2e",
                          .rounds = 4,
                          .workers = 1,
                          .diloco_yaml = "  screening: {quarantine_after: 0, max_rollbacks: 2}\n"});
  ASSERT_FALSE(job_id.empty());
  absl::StatusOr<v1::Job> job = cluster.WaitForJobEnd(job_id, absl::Minutes(5));
  ASSERT_TRUE(job.ok()) << job.status() << cluster.Logs();
  EXPECT_EQ(job->state(), v1::JOB_STATE_FAILED);
  EXPECT_TRUE(absl::StrContains(job->reason(), "2 rounds in a row rolled back")) << job->reason();
  EXPECT_TRUE(absl::StrContains(job->reason(), "every Δ of the round was refused")) << job->reason();
  EXPECT_EQ(job->progress().round(), 0u);               // nothing was applied
  EXPECT_EQ(job->progress().rounds_rolled_back(), 2u);  // the one that failed it included
  ASSERT_TRUE(cluster.StopAll().ok()) << cluster.Logs();
}

TEST(ScreeningTest, RefusalsAndQuarantineSurviveAShepherdRestart) {
  absl::StatusOr<TempDir> dir = TempDir::Create();
  ASSERT_TRUE(dir.ok());
  ClusterHarness cluster(dir->path());
  ASSERT_TRUE(cluster.StartCluster(2, "--fault_delta=nan").ok()) << cluster.Logs();
  const std::string job_id = SubmitJob(cluster, {.name = "screening_restart",
                                                 .rounds = 6,
                                                 .workers = 2,
                                                 .diloco_yaml = "  screening: {quarantine_after: 1}\n"});
  ASSERT_FALSE(job_id.empty());

  // node-2's first Δ quarantines it; the shepherd is SIGKILLed a round later.
  Process* first = cluster.shepherd();
  absl::StatusOr<std::string> quarantined =
      first->WaitForLogRegex(absl::StrCat("job ", job_id, ": worker node-2 is quarantined after 1 refused"),
                             absl::Seconds(300));
  ASSERT_TRUE(quarantined.ok()) << quarantined.status() << cluster.Logs();
  ASSERT_TRUE(first
                  ->WaitForLogRegex(absl::StrCat("job ", job_id, R"(: round [1-5]/6 complete)"), absl::Seconds(300),
                                    first->LogSize())
                  .ok())
      << cluster.Logs();
  ASSERT_TRUE(first->Signal(SIGKILL).ok());
  ASSERT_TRUE(first->Wait(absl::Seconds(10)).ok());

  // The restarted shepherd takes the counts and the quarantine back before any round.
  ASSERT_TRUE(cluster.StartShepherd().ok()) << cluster.Logs();
  Process* second = cluster.shepherd();
  absl::StatusOr<std::string> resumed = second->WaitForLogRegex(
      absl::StrCat("job ", job_id, ": screening resumed: 1 Δs refused so far, 1 workers refused, quarantined: node-2"),
      absl::Seconds(60));
  ASSERT_TRUE(resumed.ok()) << resumed.status() << cluster.Logs();
  absl::StatusOr<v1::Job> job = cluster.WaitForJobEnd(job_id, absl::Minutes(5));
  ASSERT_TRUE(job.ok()) << job.status() << cluster.Logs();
  ASSERT_EQ(job->state(), v1::JOB_STATE_COMPLETED) << job->reason() << cluster.Logs(60);
  EXPECT_EQ(job->progress().round(), 6u);
  const v1::JobProgress& p = job->progress();
  EXPECT_EQ(p.deltas_refused(), 1u);
  ASSERT_EQ(p.screened_workers_size(), 1);
  EXPECT_EQ(p.screened_workers(0).supervisor_id(), "node-2");
  EXPECT_EQ(p.screened_workers(0).refusals(), 1u);
  EXPECT_TRUE(p.screened_workers(0).quarantined());
  EXPECT_EQ(p.screened_workers(0).last_reason(), "non_finite");

  // node-2 came back to the new shepherd and got no round: every round after the restart ran
  // on node-1 alone, which trained node-2's slot too (diloco.orphan_slots: takeover).
  const std::string log = second->Log();
  EXPECT_TRUE(absl::StrContains(log, "worker node-2 stays idle (quarantined in this job)")) << log;
  EXPECT_TRUE(absl::StrContains(log, "worker node-1 takes over slot")) << log;
  std::vector<RoundLine> rounds = RoundsFromLog(log, job_id);
  ASSERT_FALSE(rounds.empty()) << log;
  for (const RoundLine& r : rounds) EXPECT_EQ(r.workers, 2) << "round " << r.round;
  ASSERT_TRUE(cluster.StopAll().ok()) << cluster.Logs();
}

}  // namespace
}  // namespace pcp::testing

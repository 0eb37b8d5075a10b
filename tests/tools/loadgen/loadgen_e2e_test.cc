// pcp-loadgen against a real pcp-shepherd on loopback: 4 simulated workers run a tiny job's
// rounds to the end, and the report has every round with every worker and its figures; with
// drops, a stall and a slow sender the rounds still complete; the same for Streaming DiLoCo.
#include <sys/wait.h>

#include "absl/strings/str_cat.h"
#include "cluster_harness.h"
#include "gtest/gtest.h"
#include "pcp/base/file.h"
#include "pcp/base/json.h"
#include "pcp/testing/temp_dir.h"
#include "shepherd_fixture.h"

namespace pcp::testing {
namespace {

class LoadgenE2eTest : public ShepherdOnlyTest {
 protected:
  // Runs pcp-loadgen to its end; its exit code (-1: killed) and log.
  std::pair<int, std::string> RunLoadgen(const std::string& name, std::vector<std::string> args) {
    std::vector<std::string> all = {absl::StrCat("--shepherd=", cluster_->admin_target()),
                                    absl::StrCat("--shepherd_pid=", cluster_->shepherd()->pid()), "--max_seconds=40"};
    all.insert(all.end(), args.begin(), args.end());
    absl::StatusOr<std::unique_ptr<Process>> p = Process::Start(
        {.binary = PCP_LOADGEN_BINARY, .args = all, .log_path = absl::StrCat(dir_->path(), "/", name, ".log")});
    if (!p.ok()) return {-1, std::string(p.status().message())};
    absl::StatusOr<int> status = (*p)->Wait(absl::Seconds(60));
    if (!status.ok()) {
      (void)(*p)->Stop();
      return {-1, (*p)->Log()};
    }
    return {WIFEXITED(*status) ? WEXITSTATUS(*status) : -1, (*p)->Log()};
  }
};

TEST_F(LoadgenE2eTest, FourSimulatedWorkersCompleteTwoRoundsAndTheReportHasEveryFigure) {
  const std::string job = cluster_->WriteJob({.name = "loadgen_e2e",
                                              .rounds = 2,
                                              .inner_steps = 5,
                                              .workers = 4,
                                              .min_workers = 4,
                                              .checkpoint_every = 100,
                                              .eval_iters = 1});
  const std::string json_path = dir_->path() + "/report.json";
  auto [code, log] = RunLoadgen("loadgen", {"--workers=4", absl::StrCat("--job=", job), "--compute_s=0.3",
                                            absl::StrCat("--json=", json_path)});
  ASSERT_EQ(code, 0) << log << cluster_->Logs();
  for (const char* column : {"round", "workers", "overhead_s", "outer_ms", "rss_mib", "hwm_mib", "cpu_s", "in_mbs",
                             "out_mbs", "JOB_STATE_COMPLETED"}) {
    EXPECT_NE(log.find(column), std::string::npos) << column << "\n" << log;
  }
  absl::StatusOr<std::string> text = ReadFile(json_path);
  ASSERT_TRUE(text.ok()) << text.status();
  absl::StatusOr<Json> report = Json::Parse(*text);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->Find("workers")->int_value(), 4);
  EXPECT_FALSE(report->Find("job_id")->string_value().empty());
  EXPECT_GT(report->Find("parameters")->int_value(), 0);
  EXPECT_TRUE(report->Find("error")->is_null()) << *text;
  const Json& rounds = *report->Find("rounds");
  ASSERT_EQ(rounds.size(), 2u) << *text;
  for (size_t i = 0; i < 2; ++i) {
    const Json& r = rounds.array_items()[i];
    SCOPED_TRACE(r.Serialize());
    EXPECT_EQ(r.Find("round")->int_value(), static_cast<int64_t>(i + 1));
    EXPECT_EQ(r.Find("workers")->int_value(), 4);  // the shepherd's participants
    EXPECT_EQ(r.Find("sent")->int_value(), 4);     // Δs the loadgen finished sending
    EXPECT_TRUE(r.Find("outer_step_ms")->is_number());
    EXPECT_GT(r.Find("rss_bytes")->int_value(), 0);
    EXPECT_GE(r.Find("hwm_bytes")->int_value(), r.Find("rss_bytes")->int_value());
    EXPECT_TRUE(r.Find("cpu_s")->is_number());
    EXPECT_GT(r.Find("bytes_in")->int_value(), 0);   // θ
    EXPECT_GT(r.Find("bytes_out")->int_value(), 0);  // Δ
  }
  // Round 1 has a next round, so an overhead; the last round has none.
  EXPECT_GE(rounds.array_items()[0].Find("overhead_s")->number_value(), 0.0);
  EXPECT_LT(rounds.array_items()[0].Find("overhead_s")->number_value(), 10.0);
  EXPECT_TRUE(rounds.array_items()[1].Find("overhead_s")->is_null());
}

// Streaming DiLoCo (P = 4 fragments, τ_o = 1, 2 steps a round) with streaming aggregation:
// the simulated workers queue the StartRounds sent one round ahead, wait for each fragment
// overlap_steps into the next round, and send each round's fragment Δ; every round has every
// worker, each Δ is a quarter of θ, and no replica needed θ again.
TEST_F(LoadgenE2eTest, StreamingDilocoFragmentsRoundByRoundWithEveryWorker) {
  const std::string job =
      cluster_->WriteJob({.name = "loadgen_streaming",
                          .rounds = 8,
                          .inner_steps = 8,
                          .workers = 4,
                          .min_workers = 4,
                          .checkpoint_every = 100,
                          .eval_iters = 1,
                          .diloco_yaml = "  streaming: {fragments: 4, overlap_steps: 1}\n  aggregation: streaming\n"});
  const std::string json_path = dir_->path() + "/streaming.json";
  auto [code, log] = RunLoadgen("loadgen-streaming", {"--workers=4", absl::StrCat("--job=", job), "--compute_s=0.2",
                                                      "--id_prefix=lg-stream", absl::StrCat("--json=", json_path)});
  ASSERT_EQ(code, 0) << log << cluster_->Logs();
  absl::StatusOr<std::string> text = ReadFile(json_path);
  ASSERT_TRUE(text.ok()) << text.status();
  absl::StatusOr<Json> report = Json::Parse(*text);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_TRUE(report->Find("error")->is_null()) << *text;
  EXPECT_NE(report->Find("end_reason")->string_value().find("COMPLETED"), std::string::npos) << *text;
  const int64_t params = report->Find("parameters")->int_value();
  ASSERT_GT(params, 0);
  // One fragment's Δ: ⌈|θ|/4⌉ f32 values at most.
  EXPECT_LE(report->Find("delta_bytes")->int_value(), (params + 3) / 4 * 4) << *text;
  EXPECT_GE(report->Find("delta_bytes")->int_value(), params / 4 * 4) << *text;
  const Json& rounds = *report->Find("rounds");
  ASSERT_EQ(rounds.size(), 8u) << *text;
  for (const Json& r : rounds.array_items()) {
    SCOPED_TRACE(r.Serialize());
    EXPECT_EQ(r.Find("workers")->int_value(), 4);  // the shepherd's participants
    EXPECT_EQ(r.Find("sent")->int_value(), 4);     // fragment Δs the loadgen finished sending
    EXPECT_GT(r.Find("bytes_in")->int_value(), 0);
  }
  // Rounds 2.. carry a fragment down, not θ: well under θ's bytes to each of the 4 workers.
  for (size_t i = 1; i + 1 < rounds.size(); ++i) {
    EXPECT_LT(rounds.array_items()[i].Find("bytes_in")->int_value(), params * 4 * 4 / 2) << *text;
  }
  const std::string shepherd_log = cluster_->shepherd()->Log();
  EXPECT_NE(shepherd_log.find("streaming DiLoCo: 4 fragments"), std::string::npos) << shepherd_log;
  EXPECT_NE(shepherd_log.find("Δ aggregation streaming"), std::string::npos) << shepherd_log;
  EXPECT_EQ(shepherd_log.find("does not match the shepherd's"), std::string::npos) << shepherd_log;  // no resync
}

// The same with drops (a dropped worker comes back, gets θ in full and is sent the round
// again or the next one) and a stall: every round still completes.
TEST_F(LoadgenE2eTest, StreamingDilocoSurvivesDropsAndAStall) {
  const std::string job =
      cluster_->WriteJob({.name = "loadgen_streaming_faults",
                          .rounds = 8,
                          .inner_steps = 8,
                          .workers = 4,
                          .min_workers = 1,
                          .checkpoint_every = 100,
                          .round_deadline_s = 10,
                          .eval_iters = 1,
                          .diloco_yaml = "  streaming: {fragments: 4, overlap_steps: 1}\n  aggregation: streaming\n"});
  const std::string json_path = dir_->path() + "/streaming-faults.json";
  auto [code, log] = RunLoadgen("loadgen-streaming-faults",
                                {"--workers=4", absl::StrCat("--job=", job), "--compute_s=0.2", "--drop_rate=0.3",
                                 "--reconnect_ms=100", "--seed=5", "--stall_rounds=3", "--stall_s=0.5",
                                 "--id_prefix=lg-sfault", absl::StrCat("--json=", json_path)});
  ASSERT_EQ(code, 0) << log << cluster_->Logs();
  absl::StatusOr<std::string> text = ReadFile(json_path);
  ASSERT_TRUE(text.ok()) << text.status();
  absl::StatusOr<Json> report = Json::Parse(*text);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_NE(report->Find("end_reason")->string_value().find("COMPLETED"), std::string::npos) << *text;
  const Json& rounds = *report->Find("rounds");
  ASSERT_EQ(rounds.size(), 8u) << *text;
  int64_t drops = 0;
  for (const Json& r : rounds.array_items()) {
    drops += r.Find("drops")->int_value();
    EXPECT_GE(r.Find("workers")->int_value(), 1) << r.Serialize();
  }
  EXPECT_GE(drops, 1) << *text;
}

TEST_F(LoadgenE2eTest, DropsStallsAndSlowSendersStillCompleteEveryRound) {
  const std::string job = cluster_->WriteJob({.name = "loadgen_faults",
                                              .rounds = 3,
                                              .inner_steps = 5,
                                              .workers = 4,
                                              .min_workers = 4,
                                              .checkpoint_every = 100,
                                              .eval_iters = 1});
  const std::string json_path = dir_->path() + "/faults.json";
  // Every worker drops its stream in about half the rounds (and comes back with a new
  // incarnation); the last one stalls 1 s in round 2; the first sends its Δ at 2 Mbit/s.
  auto [code, log] =
      RunLoadgen("loadgen-faults", {"--workers=4", absl::StrCat("--job=", job), "--compute_s=0.2", "--drop_rate=0.5",
                                    "--reconnect_ms=100", "--seed=3", "--stall_rounds=2", "--stall_s=1",
                                    "--slow_senders=1", "--slow_mbit=2", absl::StrCat("--json=", json_path)});
  ASSERT_EQ(code, 0) << log << cluster_->Logs();
  absl::StatusOr<std::string> text = ReadFile(json_path);
  ASSERT_TRUE(text.ok()) << text.status();
  absl::StatusOr<Json> report = Json::Parse(*text);
  ASSERT_TRUE(report.ok()) << report.status();
  const Json& rounds = *report->Find("rounds");
  ASSERT_EQ(rounds.size(), 3u) << *text;
  int64_t drops = 0;
  for (const Json& r : rounds.array_items()) {
    drops += r.Find("drops")->int_value();
    EXPECT_GE(r.Find("workers")->int_value(), 1) << r.Serialize();
  }
  EXPECT_GE(drops, 1) << *text;
  // The stall holds round 2 for at least its second.
  EXPECT_GE(rounds.array_items()[1].Find("round_s")->number_value(), 1.0) << *text;
  EXPECT_NE(report->Find("end_reason")->string_value().find("COMPLETED"), std::string::npos) << *text;
}

TEST_F(LoadgenE2eTest, AttachesToAJobSubmittedElsewhereAndStopsAfterItsRounds) {
  // Submitted with pcpctl; the loadgen learns the job from its workers' Assignment.
  absl::StatusOr<std::string> job_id = cluster_->SubmitJob({.name = "loadgen_attach",
                                                            .rounds = 6,
                                                            .inner_steps = 5,
                                                            .workers = 3,
                                                            .min_workers = 3,
                                                            .checkpoint_every = 100,
                                                            .eval_iters = 1});
  ASSERT_TRUE(job_id.ok()) << job_id.status();
  const std::string json_path = dir_->path() + "/attach.json";
  auto [code, log] = RunLoadgen("loadgen-attach",
                                {"--workers=3", "--rounds=2", "--compute_s=0.2", absl::StrCat("--json=", json_path)});
  ASSERT_EQ(code, 0) << log << cluster_->Logs();
  absl::StatusOr<std::string> text = ReadFile(json_path);
  ASSERT_TRUE(text.ok()) << text.status();
  absl::StatusOr<Json> report = Json::Parse(*text);
  ASSERT_TRUE(report.ok()) << report.status();
  EXPECT_EQ(report->Find("job_id")->string_value(), *job_id);
  EXPECT_EQ(report->Find("end_reason")->string_value(), "2 rounds done");
  const Json& rounds = *report->Find("rounds");
  ASSERT_GE(rounds.size(), 2u) << *text;
  EXPECT_EQ(rounds.array_items()[0].Find("workers")->int_value(), 3);
  EXPECT_EQ(rounds.array_items()[1].Find("workers")->int_value(), 3);
  // Not submitted here: the job is left running (a later loadgen, or real workers, go on).
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  v1::GetJobRequest request;
  request.set_job_id(*job_id);
  v1::Job job;
  ASSERT_TRUE(cluster_->admin().GetJob(&context, request, &job).ok());
  EXPECT_EQ(job.state(), v1::JOB_STATE_RUNNING) << job.ShortDebugString();
}

}  // namespace
}  // namespace pcp::testing

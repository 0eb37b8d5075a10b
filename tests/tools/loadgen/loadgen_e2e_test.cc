// pcp-loadgen against a real pcp-shepherd on loopback: 4 simulated workers run a tiny job's
// rounds to the end, and the report has every round with every worker and its figures; with
// drops, a stall and a slow sender the rounds still complete.
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
                                    absl::StrCat("--shepherd_pid=", cluster_->shepherd()->pid()),
                                    "--max_seconds=40"};
    all.insert(all.end(), args.begin(), args.end());
    absl::StatusOr<std::unique_ptr<Process>> p =
        Process::Start({.binary = PCP_LOADGEN_BINARY, .args = all, .log_path = absl::StrCat(dir_->path(), "/", name, ".log")});
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
  const std::string job = cluster_->WriteJob({.name = "loadgen_e2e", .rounds = 2, .inner_steps = 5, .workers = 4,
                                              .min_workers = 4, .checkpoint_every = 100, .eval_iters = 1});
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

  // A streaming DiLoCo job is refused with a message, not simulated wrongly.
  const std::string streaming =
      cluster_->WriteJob({.name = "loadgen_streaming", .rounds = 2, .inner_steps = 4, .workers = 2, .min_workers = 2,
                          .checkpoint_every = 100, .eval_iters = 1, .diloco_yaml = "  streaming: {fragments: 2}\n"});
  auto [code2, log2] = RunLoadgen("loadgen-streaming", {"--workers=2", absl::StrCat("--job=", streaming),
                                                        "--compute_s=0.1", "--id_prefix=lg-stream"});
  EXPECT_EQ(code2, 1) << log2;
  EXPECT_NE(log2.find("plain DiLoCo only"), std::string::npos) << log2;
}


TEST_F(LoadgenE2eTest, DropsStallsAndSlowSendersStillCompleteEveryRound) {
  const std::string job = cluster_->WriteJob({.name = "loadgen_faults", .rounds = 3, .inner_steps = 5, .workers = 4,
                                              .min_workers = 4, .checkpoint_every = 100, .eval_iters = 1});
  const std::string json_path = dir_->path() + "/faults.json";
  // Every worker drops its stream in about half the rounds (and comes back with a new
  // incarnation); the last one stalls 1 s in round 2; the first sends its Δ at 2 Mbit/s.
  auto [code, log] = RunLoadgen("loadgen-faults", {"--workers=4", absl::StrCat("--job=", job), "--compute_s=0.2",
                                                   "--drop_rate=0.5", "--reconnect_ms=100", "--seed=3",
                                                   "--stall_rounds=2", "--stall_s=1", "--slow_senders=1",
                                                   "--slow_mbit=2", absl::StrCat("--json=", json_path)});
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
  absl::StatusOr<std::string> job_id = cluster_->SubmitJob(
      {.name = "loadgen_attach", .rounds = 6, .inner_steps = 5, .workers = 3, .min_workers = 3,
       .checkpoint_every = 100, .eval_iters = 1});
  ASSERT_TRUE(job_id.ok()) << job_id.status();
  const std::string json_path = dir_->path() + "/attach.json";
  auto [code, log] = RunLoadgen("loadgen-attach", {"--workers=3", "--rounds=2", "--compute_s=0.2",
                                                   absl::StrCat("--json=", json_path)});
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

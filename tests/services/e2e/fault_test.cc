// Faults with real SIGKILL on a real cluster (processes on loopback):
//  (a) a worker killed mid-round: its supervisor restarts it, it rejoins under the same
//      supervisor id and is sent the round it was killed in (a late join), which completes
//      with both workers; the job completes.
//  (b) the shepherd killed mid-job: started again on the same state dir it resumes from its
//      last checkpoint (losing at most checkpoint_every rounds), the workers reconnect by
//      themselves, the job completes; a `pcpctl watch` running across the restart follows it;
//      the job's per-round history survives too: rounds up to the checkpoint keep their
//      records, the rounds run again replace theirs, and every round is there once.
// Prints time to detect and time to rejoin / resume.
#include <signal.h>

#include <algorithm>
#include <cstdio>
#include <regex>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "cluster_harness.h"
#include "gtest/gtest.h"
#include "pcp/base/file.h"

namespace pcp::testing {
namespace {

std::string Submit(ClusterHarness& cluster, const E2eJob& spec) {
  absl::StatusOr<std::string> yaml = ReadFile(cluster.WriteJob(spec));
  EXPECT_TRUE(yaml.ok());
  grpc::ClientContext context;
  SetDeadline(&context);
  v1::SubmitJobRequest request;
  request.set_yaml(*yaml);
  request.set_file_name(spec.name + ".yaml");
  v1::SubmitJobResponse response;
  grpc::Status status = cluster.admin().SubmitJob(&context, request, &response);
  EXPECT_TRUE(status.ok()) << status.error_message();
  return response.job_id();
}

// The number in the first capture group of `line` matched by `pattern`; -1 if none.
int Capture(const std::string& line, const std::string& pattern) {
  std::smatch m;
  std::regex re(pattern);
  return std::regex_search(line, m, re) ? std::stoi(m[1].str()) : -1;
}

// The largest N over all log lines matching `pattern` (one capture group), -1 if none.
int LastNumber(const std::string& log, const std::string& pattern) {
  std::regex re(pattern);
  int last = -1;
  for (auto it = std::sregex_iterator(log.begin(), log.end(), re); it != std::sregex_iterator(); ++it) {
    last = std::max(last, std::stoi((*it)[1].str()));
  }
  return last;
}

// Every record of the job's history (GetJobHistory, in pages of 3: several even for a short job).
std::vector<v1::RoundRecord> History(ClusterHarness& cluster, const std::string& job_id) {
  absl::StatusOr<std::vector<v1::RoundRecord>> records = cluster.JobHistory(job_id, 3);
  EXPECT_TRUE(records.ok()) << records.status();
  return records.ok() ? *std::move(records) : std::vector<v1::RoundRecord>();
}

double MsSince(absl::Time t) { return absl::ToDoubleMilliseconds(absl::Now() - t); }

// Milliseconds from `t` to when the service logged `line` (by the line's own timestamp, so
// the test's polling adds nothing).
double MsUntilLogged(absl::Time t, const std::string& line) {
  return absl::ToDoubleMilliseconds(LogLineTime(line, absl::Now()) - t);
}

TEST(FaultTest, WorkerKilledMidRoundRejoinsWithTheSameIdAndTheJobCompletes) {
  absl::StatusOr<TempDir> dir = TempDir::Create();
  ASSERT_TRUE(dir.ok()) << dir.status();
  ClusterHarness cluster(dir->path());
  ASSERT_TRUE(cluster.StartCluster(2).ok()) << cluster.Logs();

  // Rounds long enough (about 2 s) to kill a worker in the middle of one, and for it to be
  // back well before the survivor finishes, even on a loaded machine (the late join needs
  // the joiner's delay below a round's time).
  E2eJob spec;
  spec.name = "fault_worker";
  spec.rounds = 4;
  spec.inner_steps = 1200;
  spec.checkpoint_every = 2;
  spec.min_workers = 1;
  std::string job_id = Submit(cluster, spec);
  ASSERT_FALSE(job_id.empty());

  Process* shepherd = cluster.shepherd();
  const int victim = 1;  // node-2
  const std::string victim_id = cluster.supervisor_id(victim);
  absl::StatusOr<std::string> started =
      shepherd->WaitForLogRegex(absl::StrCat("job ", job_id, ": round 2/4 started with 2 workers"), absl::Seconds(300));
  ASSERT_TRUE(started.ok()) << started.status() << cluster.Logs();
  // Let it train a little: the kill lands mid-round, while both workers run inner steps.
  absl::SleepFor(absl::Milliseconds(300));
  pid_t worker = cluster.WorkerPid(victim);
  ASSERT_GT(worker, 0) << "no worker process under " << victim_id;
  size_t from = shepherd->LogSize();
  absl::Time t_kill = absl::Now();
  ASSERT_EQ(kill(worker, SIGKILL), 0);

  // Detected: the shepherd notes the worker gone and drops it from the round.
  absl::StatusOr<std::string> left =
      shepherd->WaitForLogRegex(absl::StrCat("worker ", victim_id, " left"), absl::Seconds(30), from);
  ASSERT_TRUE(left.ok()) << left.status();
  double detect_ms = MsUntilLogged(t_kill, *left);
  // Its supervisor restarts it; it rejoins under the same id as a new incarnation.
  absl::StatusOr<std::string> joined =
      shepherd->WaitForLogRegex(absl::StrCat("worker ", victim_id, R"( joined: .*incarnation 2)"), absl::Seconds(60),
                                from);
  ASSERT_TRUE(joined.ok()) << joined.status() << cluster.Logs();
  double rejoin_ms = MsUntilLogged(t_kill, *joined);
  // It is sent the round it was killed in (late, with the same θ and data), and that round
  // completes with both workers: nothing of the round is lost but the victim's partial work.
  absl::StatusOr<std::string> late =
      shepherd->WaitForLogRegex(absl::StrCat("job ", job_id, ": ", victim_id, R"( joins round (\d+) late)"),
                                absl::Seconds(60), from);
  ASSERT_TRUE(late.ok()) << late.status() << cluster.Logs();
  double late_join_ms = MsUntilLogged(t_kill, *late);
  const int killed_round = Capture(*late, R"(joins round (\d+) late)");
  EXPECT_EQ(killed_round, 2);
  absl::StatusOr<std::string> closed =
      shepherd->WaitForLogRegex(absl::StrCat("job ", job_id, ": round ", killed_round, "/4 complete: "),
                                absl::Seconds(300), from);
  ASSERT_TRUE(closed.ok()) << closed.status() << cluster.Logs();
  double closed_ms = MsUntilLogged(t_kill, *closed);
  EXPECT_TRUE(absl::StrContains(*closed, "complete: 2 workers")) << *closed;

  std::printf("worker %s (pid %d) SIGKILLed mid-round 2:\n", victim_id.c_str(), worker);
  std::printf("  time to detect (kill -> shepherd logs it left):   %8.1f ms\n", detect_ms);
  std::printf("  time to rejoin (kill -> incarnation 2 joined):   %8.1f ms\n", rejoin_ms);
  std::printf("  back in round %d (kill -> joins it late):         %8.1f ms\n", killed_round, late_join_ms);
  std::printf("  round %d completed with both workers after:       %8.1f ms\n", killed_round, closed_ms);
  EXPECT_LT(detect_ms, 5000) << "a killed worker's broken stream is noticed within seconds";

  absl::StatusOr<v1::Job> job = cluster.WaitForJobEnd(job_id, absl::Seconds(600));
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(job->state(), v1::JOB_STATE_COMPLETED) << job->reason();
  EXPECT_EQ(job->progress().round(), 4u);

  // Same slot, restarted once, by its own supervisor.
  grpc::ClientContext context;
  SetDeadline(&context);
  v1::ListWorkersResponse workers;
  ASSERT_TRUE(cluster.admin().ListWorkers(&context, v1::ListWorkersRequest(), &workers).ok());
  ASSERT_EQ(workers.workers_size(), 2) << workers.DebugString();
  const v1::WorkerInfo& info = workers.workers(victim);
  EXPECT_EQ(info.supervisor_id(), victim_id);
  EXPECT_TRUE(info.worker_connected());
  EXPECT_EQ(info.process().restarts(), 1u) << info.DebugString();
  EXPECT_EQ(info.process().last_signal(), SIGKILL) << info.DebugString();
  EXPECT_NE(info.process().pid(), worker);
  EXPECT_FALSE(PidAlive(worker));

  ASSERT_TRUE(cluster.StopAll().ok()) << cluster.Logs();
}

TEST(FaultTest, ShepherdKilledMidJobResumesFromItsLastCheckpoint) {
  absl::StatusOr<TempDir> dir = TempDir::Create();
  ASSERT_TRUE(dir.ok()) << dir.status();
  ClusterHarness cluster(dir->path());
  ASSERT_TRUE(cluster.StartCluster(2).ok()) << cluster.Logs();

  E2eJob spec;
  spec.name = "fault_shepherd";
  spec.rounds = 8;
  spec.inner_steps = 100;
  spec.checkpoint_every = 2;
  std::string job_id = Submit(cluster, spec);
  ASSERT_FALSE(job_id.empty());

  // A pcpctl watch that stays on across the shepherd's death and restart.
  absl::StatusOr<std::unique_ptr<Process>> watch =
      Process::Start({.binary = PCPCTL_BINARY,
                      .args = {absl::StrCat("--shepherd=", cluster.admin_target()), "watch", job_id},
                      .log_path = cluster.log_dir() + "/pcpctl-watch-across-restart.log"});
  ASSERT_TRUE(watch.ok()) << watch.status();

  // Kill it after the checkpoint of round 2 and one more completed round (mid-round 4).
  Process* first = cluster.shepherd();
  ASSERT_TRUE(
      first->WaitForLogRegex(absl::StrCat("job ", job_id, ": checkpoint of round 2 written"), absl::Seconds(300)).ok())
      << cluster.Logs();
  ASSERT_TRUE(first->WaitForLogRegex(absl::StrCat("job ", job_id, ": round 3/8 complete"), absl::Seconds(300)).ok())
      << cluster.Logs();
  std::vector<v1::RoundRecord> before_kill = History(cluster, job_id);
  ASSERT_GE(before_kill.size(), 3u);
  for (size_t i = 0; i < before_kill.size(); ++i) EXPECT_EQ(before_kill[i].round(), i + 1);
  absl::SleepFor(absl::Milliseconds(200));
  const int64_t kill_unix_ms = absl::ToUnixMillis(absl::Now());
  ASSERT_TRUE(first->Signal(SIGKILL).ok());
  absl::StatusOr<int> killed = first->Wait(absl::Seconds(10));
  ASSERT_TRUE(killed.ok());
  EXPECT_EQ(DescribeWaitStatus(*killed), "killed by signal 9 (Killed)");
  std::string before = first->Log();
  int rounds_done = LastNumber(before, absl::StrCat("job ", job_id, R"(: round (\d+)/8 complete)"));
  int last_checkpoint = LastNumber(before, absl::StrCat("job ", job_id, R"(: checkpoint of round (\d+) written)"));
  ASSERT_GE(rounds_done, 3);
  ASSERT_GE(last_checkpoint, 2);

  // Started again on the same state dir and port.
  absl::Time t_restart = absl::Now();
  ASSERT_TRUE(cluster.StartShepherd().ok()) << cluster.Logs();
  double serving_ms = MsSince(t_restart);
  Process* second = cluster.shepherd();
  absl::StatusOr<std::string> resumed =
      second->WaitForLogRegex(absl::StrCat("job ", job_id, R"(: resuming from the checkpoint of round (\d+))"),
                              absl::Seconds(60));
  ASSERT_TRUE(resumed.ok()) << resumed.status() << cluster.Logs();
  int resumed_at = Capture(*resumed, R"(checkpoint of round (\d+))");
  double resumed_ms = MsUntilLogged(t_restart, *resumed);
  // Workers reconnect by themselves (nobody restarts them).
  ASSERT_TRUE(cluster.WaitForWorkers(2, absl::Seconds(60)).ok()) << cluster.Logs();
  double reconnect_ms = MsSince(t_restart);
  absl::StatusOr<std::string> next_round =
      second->WaitForLogRegex(absl::StrCat("job ", job_id, R"(: round \d+/8 complete)"), absl::Seconds(300));
  ASSERT_TRUE(next_round.ok()) << next_round.status() << cluster.Logs();
  double first_round_ms = MsUntilLogged(t_restart, *next_round);

  std::printf("shepherd SIGKILLed after %d completed rounds (last checkpoint: round %d):\n", rounds_done,
              last_checkpoint);
  std::printf("  restarted shepherd serving after:             %8.1f ms\n", serving_ms);
  std::printf("  resumed from the checkpoint of round %d; rounds lost: %d (checkpoint_every %d)\n", resumed_at,
              rounds_done - resumed_at, spec.checkpoint_every);
  std::printf("  job resumed (logged) after:                   %8.1f ms\n", resumed_ms);
  std::printf("  both workers reconnected after:               %8.1f ms\n", reconnect_ms);
  std::printf("  first round completed after the restart:      %8.1f ms\n", first_round_ms);
  EXPECT_GE(resumed_at, last_checkpoint);
  EXPECT_LE(rounds_done - resumed_at, spec.checkpoint_every);

  absl::StatusOr<v1::Job> job = cluster.WaitForJobEnd(job_id, absl::Seconds(600));
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(job->state(), v1::JOB_STATE_COMPLETED) << job->reason();
  EXPECT_EQ(job->progress().round(), 8u);

  // The history: every round once, in order; the rounds up to the checkpoint resumed from
  // recorded before the kill, the ones after it recorded again after the restart.
  std::vector<v1::RoundRecord> history = History(cluster, job_id);
  ASSERT_EQ(history.size(), 8u);
  uint64_t tokens = 0;
  for (size_t i = 0; i < history.size(); ++i) {
    const v1::RoundRecord& r = history[i];
    EXPECT_EQ(r.round(), i + 1);
    EXPECT_TRUE(r.has_train_loss()) << r.round();
    EXPECT_GT(r.tokens_total(), tokens) << r.round();
    tokens = r.tokens_total();
    EXPECT_GE(r.participants_size(), 1) << r.round();
    if (r.round() > 1) EXPECT_GT(r.bytes_down(), 0u) << r.round();  // (round 1: the workers draw θ₀)
    EXPECT_GT(r.bytes_up(), 0u) << r.round();
    EXPECT_GT(r.inner_lr(), 0) << r.round();
    if (r.round() <= static_cast<uint64_t>(resumed_at)) {
      EXPECT_LT(r.end_unix_ms(), kill_unix_ms) << r.round();
    } else {
      EXPECT_GT(r.start_unix_ms(), kill_unix_ms) << r.round() << " was not run again";
    }
  }
  EXPECT_EQ(tokens, job->progress().tokens_processed());
  EXPECT_TRUE(history.back().has_val_loss());  // the last round is always evaluated
  EXPECT_DOUBLE_EQ(history.back().val_loss(), job->progress().val_loss());

  // The watch followed the job across the restart and reports its result.
  absl::StatusOr<int> watched = (*watch)->Wait(absl::Seconds(60));
  ASSERT_TRUE(watched.ok()) << (*watch)->Log();
  EXPECT_EQ(DescribeWaitStatus(*watched), "exited with 0") << (*watch)->Log();
  EXPECT_TRUE(absl::StrContains((*watch)->Log(), "reconnecting")) << (*watch)->Log();
  EXPECT_TRUE(absl::StrContains((*watch)->Log(), absl::StrCat(job_id, " completed: 8 rounds"))) << (*watch)->Log();

  ASSERT_TRUE(cluster.StopAll().ok()) << cluster.Logs();
}

// A worker that stalls (SIGSTOP) keeps its TCP connection open: only missed heartbeats can
// reveal it. The round must complete without it within seconds; once it runs again
// (SIGCONT) it must find its way back, by itself or through its supervisor.
TEST(FaultTest, StalledWorkerIsDetectedByMissedHeartbeats) {
  absl::StatusOr<TempDir> dir = TempDir::Create();
  ASSERT_TRUE(dir.ok()) << dir.status();
  ClusterHarness cluster(dir->path());
  ASSERT_TRUE(cluster.StartCluster(2).ok()) << cluster.Logs();

  E2eJob spec;
  spec.name = "fault_stall";
  spec.rounds = 5;
  spec.inner_steps = 300;
  spec.min_workers = 1;
  std::string job_id = Submit(cluster, spec);
  ASSERT_FALSE(job_id.empty());
  Process* shepherd = cluster.shepherd();
  const int victim = 1;
  const std::string victim_id = cluster.supervisor_id(victim);
  ASSERT_TRUE(
      shepherd->WaitForLogRegex(absl::StrCat("job ", job_id, ": round 2/5 started with 2 workers"), absl::Seconds(300))
          .ok())
      << cluster.Logs();
  absl::SleepFor(absl::Milliseconds(300));
  pid_t worker = cluster.WorkerPid(victim);
  ASSERT_GT(worker, 0);
  size_t from = shepherd->LogSize();
  absl::Time t_stop = absl::Now();
  ASSERT_EQ(kill(worker, SIGSTOP), 0);

  absl::StatusOr<std::string> left =
      shepherd->WaitForLogRegex(absl::StrCat("worker ", victim_id, " left"), absl::Seconds(30), from);
  if (!left.ok()) kill(worker, SIGCONT);
  ASSERT_TRUE(left.ok()) << left.status() << cluster.Logs();
  double detect_ms = MsUntilLogged(t_stop, *left);
  absl::StatusOr<std::string> closed =
      shepherd->WaitForLogRegex(absl::StrCat("job ", job_id, R"(: round \d+/5 complete: 1 workers)"),
                                absl::Seconds(120), from);
  kill(worker, SIGCONT);
  ASSERT_TRUE(closed.ok()) << closed.status() << cluster.Logs();
  double closed_ms = MsUntilLogged(t_stop, *closed);
  std::printf("worker %s (pid %d) stalled by SIGSTOP mid-round 2 (heartbeat timeout 1500 ms):\n", victim_id.c_str(),
              worker);
  std::printf("  time to detect (stop -> shepherd logs it left): %8.1f ms\n", detect_ms);
  std::printf("  round closed without it after:                 %8.1f ms\n", closed_ms);
  EXPECT_LT(detect_ms, 10000) << "detection by heartbeats should take seconds";

  absl::StatusOr<std::string> both_again =
      shepherd->WaitForLogRegex(absl::StrCat("job ", job_id, R"(: round \d+/5 complete: 2 workers)"),
                                absl::Seconds(300), from);
  EXPECT_TRUE(both_again.ok()) << both_again.status() << cluster.Logs();
  if (both_again.ok()) {
    std::printf("  back in a round with both workers after:       %8.1f ms\n", MsUntilLogged(t_stop, *both_again));
  }
  absl::StatusOr<v1::Job> job = cluster.WaitForJobEnd(job_id, absl::Seconds(600));
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(job->state(), v1::JOB_STATE_COMPLETED) << job->reason();
  ASSERT_TRUE(cluster.StopAll().ok()) << cluster.Logs();
}

}  // namespace
}  // namespace pcp::testing

// Asynchronous DiLoCo on a real cluster (docs/diloco.md, "Asynchronous DiLoCo";
// pcp/diloco/async.h): two workers, one slowed with the test-only --fault_slow_factor. The
// shepherd applies each Δ as it arrives and sends its worker the newest θ at once, so the
// fast worker trains more tasks than the slow one; the job uses rounds × workers Δs in all
// (the synchronous job's tokens), its loss falls, and every replica of θ matches the
// shepherd's (no resync).
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "checkpoint_slots.h"
#include "cluster_harness.h"
#include "gtest/gtest.h"

namespace pcp::testing {
namespace {

constexpr int kRounds = 6;
constexpr int kTau = 10;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(AsyncTest, FastWorkerTrainsMoreTasksAndTheJobConverges) {
  absl::StatusOr<TempDir> dir = TempDir::Create();
  ASSERT_TRUE(dir.ok());
  ClusterHarness cluster(dir->path());
  // 8x: a task's 10 steps of this tiny model take milliseconds, about what its round trip
  // takes; at 4x, under heavy load, the fast worker's tasks were no more (6 and 6, once in 70).
  ASSERT_TRUE(cluster.StartCluster(2, "--fault_slow_factor=8").ok()) << cluster.Logs();

  E2eJob spec{.name = "async_e2e", .rounds = kRounds, .inner_steps = kTau, .workers = 2};
  spec.diloco_yaml = "  mode: async\n  async: {quorum: 1, staleness: inverse}\n  compression: {down: int8}\n";
  absl::StatusOr<ClusterHarness::FinishedJob> run = cluster.RunJob(spec, absl::Minutes(8));
  ASSERT_TRUE(run.ok()) << run.status() << cluster.Logs(60);
  ASSERT_EQ(run->job.state(), v1::JOB_STATE_COMPLETED) << run->job.reason() << cluster.Logs(60);

  absl::StatusOr<std::vector<CheckpointSlot>> slots = ReadCheckpointSlots(run->job.checkpoint_path());
  ASSERT_TRUE(slots.ok()) << slots.status();
  ASSERT_EQ(slots->size(), 2u);
  uint64_t fast = 0, slow = 0;
  for (const CheckpointSlot& s : *slots) {
    EXPECT_EQ(s.sampler_cursor, s.rounds_done * kTau) << s.supervisor_id;  // nothing twice, nothing skipped
    (s.supervisor_id == cluster.supervisor_id(0) ? fast : slow) += s.rounds_done;
  }
  EXPECT_EQ(fast + slow, static_cast<uint64_t>(kRounds * 2));
  EXPECT_GT(fast, slow);
  EXPECT_GE(slow, 1u);
  // One outer update per group of Δs (quorum 1: each Δ alone, unless a second arrived while the
  // first was being applied, as happens under load), each recorded with every Δ in one record;
  // the loss falls. (A single Δ's train loss is noisy: the val loss, estimated every `workers`
  // Δs, is not.)
  size_t deltas = 0;
  for (const v1::RoundRecord& rec : run->history) deltas += static_cast<size_t>(rec.participants_size());
  EXPECT_EQ(deltas, static_cast<size_t>(kRounds * 2));
  ASSERT_LE(run->history.size(), static_cast<size_t>(kRounds * 2));
  ASSERT_GE(run->history.size(), static_cast<size_t>(kRounds));
  std::vector<double> val;
  for (const v1::RoundRecord& rec : run->history) {
    if (rec.has_val_loss()) val.push_back(rec.val_loss());
  }
  ASSERT_GE(val.size(), 2u);
  EXPECT_LT(val.back(), val.front());
  ASSERT_TRUE(run->job.progress().has_val_loss());
  EXPECT_LT(run->job.progress().val_loss(), 4.17);  // ln 65: what an untrained model scores
  // θ updates went out int8-encoded; every replica matched the shepherd's CRC.
  const std::string log = ReadFile(cluster.log_dir() + "/shepherd-1.log");
  EXPECT_FALSE(absl::StrContains(log, "does not match the shepherd's")) << cluster.Logs(60);
  std::printf("async: fast worker %lu tasks, slow worker %lu; val loss %.4f\n", fast, slow,
              run->job.progress().val_loss());
  ASSERT_TRUE(cluster.StopAll().ok()) << cluster.Logs();
}

// Dynamic local updates: with a time budget each task runs the steps its worker fits in it, so
// the slow worker's tasks are shorter (its Δs as fresh as the fast one's), and the job ends at
// the synchronous job's tokens (rounds × τ × workers steps, the last tasks capped).
TEST(AsyncTest, TimeBudgetedTasksRunTheStepsEachWorkerFits) {
  absl::StatusOr<TempDir> dir = TempDir::Create();
  ASSERT_TRUE(dir.ok());
  ClusterHarness cluster(dir->path());
  ASSERT_TRUE(cluster.StartCluster(2, "--fault_slow_factor=4").ok()) << cluster.Logs();

  E2eJob spec{.name = "async_budget_e2e", .rounds = kRounds, .inner_steps = kTau, .workers = 2};
  spec.diloco_yaml =
      "  mode: async\n  async: {quorum: 1, staleness: beyond_round}\n"
      "  time_budget: {seconds: 0.1, min_steps: 1, max_steps: 40}\n";
  absl::StatusOr<ClusterHarness::FinishedJob> run = cluster.RunJob(spec, absl::Minutes(8));
  ASSERT_TRUE(run.ok()) << run.status() << cluster.Logs(60);
  ASSERT_EQ(run->job.state(), v1::JOB_STATE_COMPLETED) << run->job.reason() << cluster.Logs(60);

  absl::StatusOr<std::vector<CheckpointSlot>> slots = ReadCheckpointSlots(run->job.checkpoint_path());
  ASSERT_TRUE(slots.ok()) << slots.status();
  ASSERT_EQ(slots->size(), 2u);
  uint64_t steps = 0, fast_steps = 0, slow_steps = 0, fast_tasks = 0, slow_tasks = 0;
  for (const CheckpointSlot& s : *slots) {
    steps += s.sampler_cursor;  // each slot's batches, once each
    const bool fast = s.supervisor_id == cluster.supervisor_id(0);
    (fast ? fast_steps : slow_steps) += s.sampler_cursor;
    (fast ? fast_tasks : slow_tasks) += s.rounds_done;
  }
  // The job's tokens: at least rounds × τ × workers steps, and less than one more task each over.
  EXPECT_GE(steps, static_cast<uint64_t>(kRounds * kTau * 2));
  EXPECT_LT(steps, static_cast<uint64_t>(kRounds * kTau * 2 + 2 * 40));
  ASSERT_GT(fast_tasks, 0u);
  ASSERT_GT(slow_tasks, 0u);
  // The slow worker's tasks ran no more steps each (fewer unless both hit a bound).
  EXPECT_LE(static_cast<double>(slow_steps) / slow_tasks, static_cast<double>(fast_steps) / fast_tasks);
  uint64_t history_tokens = 0;
  for (const v1::RoundRecord& rec : run->history) history_tokens += rec.tokens();
  EXPECT_EQ(history_tokens, run->job.progress().tokens_processed());
  ASSERT_TRUE(run->job.progress().has_val_loss());
  EXPECT_LT(run->job.progress().val_loss(), 4.17);
  const std::string log = ReadFile(cluster.log_dir() + "/shepherd-1.log");
  EXPECT_FALSE(absl::StrContains(log, "does not match the shepherd's")) << cluster.Logs(60);
  std::printf("async with a time budget: fast worker %lu tasks / %lu steps, slow %lu / %lu; val loss %.4f\n",
              fast_tasks, fast_steps, slow_tasks, slow_steps, run->job.progress().val_loss());
  ASSERT_TRUE(cluster.StopAll().ok()) << cluster.Logs();
}

}  // namespace
}  // namespace pcp::testing
